#!/usr/bin/env bash
# bench.sh measures ktool's broker against kfake (franz-go's in-memory Kafka
# cluster) with the same `ktool perf produce` and `ktool perf consume` runs,
# side by side, and puts ktool's 1 KiB-record consume rate next to the
# loopback TCP bandwidth measured in the same run.
#
# Each server runs alone while it is measured (the machine may be small), on
# 127.0.0.1, and everything started here is stopped on exit.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: scripts/bench/bench.sh [options]

  -n, --records N        records per produce/consume run, 100-byte values (default 2000000)
  -p, --partitions P     partitions of the benchmark topics (default 3)
  -l, --large-records N  1 KiB records for the consume-vs-loopback run (default 500000)
      --skip-broker      measure kfake only
      --skip-kfake       measure the ktool broker only
      --keep             keep the work directory (binaries, logs, results)
  -h, --help             this help

Every run uses acks=1 and no compression. MB = 2^20 bytes.
EOF
}

records=2000000
partitions=3
large_records=500000
skip_broker=0
skip_kfake=0
keep=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	-n | --records) records="$2"; shift 2 ;;
	-p | --partitions) partitions="$2"; shift 2 ;;
	-l | --large-records) large_records="$2"; shift 2 ;;
	--skip-broker) skip_broker=1; shift ;;
	--skip-kfake) skip_kfake=1; shift ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bench.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
for v in "$records" "$partitions" "$large_records"; do
	if ! [[ "$v" =~ ^[1-9][0-9]*$ ]]; then
		echo "bench.sh: counts must be positive integers, got $v" >&2
		exit 2
	fi
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/ktool-bench.XXXXXX")"
pids=()

cleanup() {
	local i pid
	# Newest first: clients stop before the servers they talk to.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		pid="${pids[i]}"
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	if [[ $keep -eq 1 ]]; then
		echo "work directory kept: $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { echo "bench: $*" >&2; }

# forget PID drops PID from the processes cleanup stops.
forget() {
	local p rest=()
	for p in "${pids[@]}"; do
		[[ "$p" == "$1" ]] || rest+=("$p")
	done
	pids=("${rest[@]}")
}

# stop_server PID stops one server we started.
stop_server() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	forget "$1"
}

# run_tracked CMD... runs a command in the background and waits for it, so a
# signal to this script interrupts the wait and cleanup stops the command too.
run_tracked() {
	local pid status=0
	"$@" &
	pid=$!
	pids+=("$pid")
	wait "$pid" || status=$?
	forget "$pid"
	return "$status"
}

# json_num KEY FILE prints the number under "KEY" in ktool's indented JSON.
json_num() {
	awk -v k="\"$1\":" '$1 == k { v = $2; sub(/,$/, "", v); print v; exit }' "$2"
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
	local port
	for _ in $(seq 1 100); do
		port=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "bench.sh: no free port found" >&2
	return 1
}

# wait_port PORT PID waits up to 30 s for PORT to accept connections while
# PID is alive.
wait_port() {
	local port="$1" pid="$2"
	for _ in $(seq 1 300); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.1
	done
	return 1
}

# perf_pair NAME ADDR TOPIC SIZE COUNT produces COUNT records of SIZE bytes to
# TOPIC on ADDR, then consumes them, leaving JSON in $work/NAME.{produce,consume}.json.
perf_pair() {
	local name="$1" addr="$2" topic="$3" size="$4" count="$5"
	log "$name: producing $count records of $size bytes to $topic"
	run_tracked "$work/ktool" --brokers "$addr" perf produce --topic "$topic" \
		--num-records "$count" --record-size "$size" --acks 1 --compression none \
		--partitions "$partitions" --replication-factor 1 -o json >"$work/$name.produce.json"
	log "$name: consuming $count records from $topic"
	run_tracked "$work/ktool" --brokers "$addr" perf consume --topic "$topic" \
		--num-records "$count" -o json >"$work/$name.consume.json"
}

log "building into $work"
(cd "$repo" && go build -o "$work/ktool" ./cmd/ktool &&
	go build -o "$work/kfake" ./scripts/bench/kfake &&
	go build -o "$work/loopback" ./scripts/bench/loopback)

if [[ $skip_broker -eq 0 ]] && ! "$work/ktool" broker start --help 2>/dev/null | grep -q -- "--log-dirs"; then
	log "this build has no 'ktool broker start'; measuring kfake only"
	skip_broker=1
fi
if [[ $skip_broker -eq 1 && $skip_kfake -eq 1 ]]; then
	echo "bench.sh: nothing to measure (both servers skipped)" >&2
	exit 2
fi

if [[ $skip_kfake -eq 0 ]]; then
	"$work/kfake" --port 0 --default-partitions "$partitions" >"$work/kfake.addr" 2>"$work/kfake.log" &
	kfake_pid=$!
	pids+=("$kfake_pid")
	kfake_addr=""
	for _ in $(seq 1 300); do
		kfake_addr="$(head -n 1 "$work/kfake.addr")"
		[[ -n "$kfake_addr" ]] && break
		if ! kill -0 "$kfake_pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if [[ -z "$kfake_addr" ]]; then
		echo "bench.sh: kfake did not start:" >&2
		cat "$work/kfake.log" >&2
		exit 1
	fi
	log "kfake listening on $kfake_addr"
	perf_pair kfake "$kfake_addr" bench-100 100 "$records"
	stop_server "$kfake_pid"
fi

if [[ $skip_broker -eq 0 ]]; then
	port="$(free_port)"
	mkdir -p "$work/data"
	"$work/ktool" broker start --listeners "PLAINTEXT://127.0.0.1:$port" --log-dirs "$work/data" \
		>"$work/broker.log" 2>&1 &
	broker_pid=$!
	pids+=("$broker_pid")
	if ! wait_port "$port" "$broker_pid"; then
		echo "bench.sh: ktool broker did not start:" >&2
		tail -n 50 "$work/broker.log" >&2
		exit 1
	fi
	broker_addr="127.0.0.1:$port"
	log "ktool broker listening on $broker_addr"
	perf_pair ktool "$broker_addr" bench-100 100 "$records"
	perf_pair ktool-1k "$broker_addr" bench-1k 1024 "$large_records"
	stop_server "$broker_pid"

	log "measuring loopback TCP bandwidth"
	run_tracked "$work/loopback" --duration 3s >"$work/loopback.out"
	loopback_mbps="$(cat "$work/loopback.out")"
fi

# Report.
val() { # val NAME KIND KEY FORMAT
	local f="$work/$1.$2.json" v=""
	[[ -f "$f" ]] && v="$(json_num "$3" "$f")"
	if [[ -n "$v" ]]; then printf "$4" "$v"; else echo "-"; fi
}
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}
percent() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.1f%%", 100 * a / b }'
}
row() { # row LABEL KIND KEY FORMAT
	local k f
	k="$(val ktool "$2" "$3" "$4")"
	f="$(val kfake "$2" "$3" "$4")"
	printf "%-24s %14s %14s %12s\n" "$1" "$k" "$f" "$(ratio "$k" "$f")"
}

echo
echo "records: $records x 100 B, acks=1, compression none, $partitions partitions"
printf "%-24s %14s %14s %12s\n" "" "ktool" "kfake" "ktool/kfake"
row "produce records/s" produce records_per_sec "%.0f"
row "produce MB/s" produce mb_per_sec "%.2f"
row "produce latency p50 ms" produce p50 "%.3f"
row "produce latency p99 ms" produce p99 "%.3f"
row "consume records/s" consume records_per_sec "%.0f"
row "consume MB/s" consume mb_per_sec "%.2f"
if [[ $skip_broker -eq 0 ]]; then
	large_mbps="$(val ktool-1k consume mb_per_sec "%.2f")"
	echo
	printf "ktool consume, %s x 1 KiB records: %s MB/s = %s of loopback TCP (%s MB/s)\n" \
		"$large_records" "$large_mbps" "$(percent "$large_mbps" "$loopback_mbps")" "$loopback_mbps"
fi
