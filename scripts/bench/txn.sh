#!/usr/bin/env bash
# txn.sh measures transactional produce against idempotent produce on one
# ktool broker, in one run: `ktool perf produce` alternates idempotent,
# 100-record transactions and 10,000-record transactions, ROUNDS times (each
# run to a new topic, the order reversed every other round), and prints each
# rate and the ratios of each round and their medians.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: scripts/bench/txn.sh [options]

  -n, --records N      records per run, 100-byte values (default 200000)
  -r, --rounds R       rounds of the three runs (default 3)
  -p, --partitions P   partitions of each topic (default 1)
      --short          20000 records, 1 round (what CI runs)
      --keep           keep the work directory (binary, broker log, results)
  -h, --help           this help

Every run uses acks=all, no compression and one standalone broker on
127.0.0.1. The transactional runs commit each transaction before the next
begins (ktool perf produce --transactional --transaction-size N).
EOF2
}

records=200000
rounds=3
partitions=1
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	-n | --records) records="$2"; shift 2 ;;
	-r | --rounds) rounds="$2"; shift 2 ;;
	-p | --partitions) partitions="$2"; shift 2 ;;
	--short) records=20000; rounds=1; shift ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "txn.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
for v in "$records" "$rounds" "$partitions"; do
	if ! [[ "$v" =~ ^[1-9][0-9]*$ ]]; then
		echo "txn.sh: counts must be positive integers, got $v" >&2
		exit 2
	fi
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/ktool-txn-bench.XXXXXX")"
broker_pid=""

cleanup() {
	if [[ -n "$broker_pid" ]] && kill -0 "$broker_pid" 2>/dev/null; then
		kill "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	if [[ $keep -eq 1 ]]; then
		echo "work directory kept: $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { echo "txn bench: $*" >&2; }

# json_num KEY FILE prints the number under "KEY" in ktool's indented JSON.
json_num() {
	awk -v k="\"$1\":" '$1 == k { v = $2; sub(/,$/, "", v); print v; exit }' "$2"
}

free_port() {
	local port
	for _ in $(seq 1 100); do
		port=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "txn.sh: no free port found" >&2
	return 1
}

log "building into $work"
(cd "$repo" && go build -o "$work/ktool" ./cmd/ktool)

port="$(free_port)"
mkdir -p "$work/data"
"$work/ktool" broker start --listeners "PLAINTEXT://127.0.0.1:$port" --log-dirs "$work/data" >"$work/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 1 300); do
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
	if ! kill -0 "$broker_pid" 2>/dev/null; then
		echo "txn.sh: ktool broker did not start:" >&2
		tail -n 50 "$work/broker.log" >&2
		exit 1
	fi
	sleep 0.1
done
addr="127.0.0.1:$port"
log "ktool broker listening on $addr"

# run NAME ROUND [FLAGS...] produces $records records to a new topic and
# prints their rate in records/s.
run() {
	local name="$1" round="$2"
	shift 2
	"$work/ktool" --brokers "$addr" perf produce --topic "bench-$name-$round" --num-records "$records" \
		--record-size 100 --acks all --compression none --partitions "$partitions" --replication-factor 1 \
		"$@" -o json >"$work/$name-$round.json"
	json_num records_per_sec "$work/$name-$round.json"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "records: $records x 100 B per run, acks=all, compression none, $partitions partition(s), $rounds round(s)"
printf "%-6s %14s %14s %14s %12s %12s\n" round "idempotent/s" "txn-100/s" "txn-10000/s" "100/idem" "10000/idem"
r100=() r10k=()
for round in $(seq 1 "$rounds"); do
	# Odd rounds run idempotent first, even rounds last, so that neither
	# side always meets a fresh (or a warmed-up) broker.
	if ((round % 2)); then
		log "round $round: idempotent, 100-record and 10,000-record transactions"
		idem="$(run idem "$round")"
		t100="$(run txn100 "$round" --transactional --transaction-size 100)"
		t10k="$(run txn10k "$round" --transactional --transaction-size 10000)"
	else
		log "round $round: 10,000-record and 100-record transactions, idempotent"
		t10k="$(run txn10k "$round" --transactional --transaction-size 10000)"
		t100="$(run txn100 "$round" --transactional --transaction-size 100)"
		idem="$(run idem "$round")"
	fi
	a="$(ratio "$t100" "$idem")" b="$(ratio "$t10k" "$idem")"
	r100+=("$a") r10k+=("$b")
	printf "%-6s %14.0f %14.0f %14.0f %12s %12s\n" "$round" "$idem" "$t100" "$t10k" "$a" "$b"
done
printf "%-6s %14s %14s %14s %12s %12s\n" median "" "" "" "$(echo "${r100[*]}" | median)" "$(echo "${r10k[*]}" | median)"
