#!/usr/bin/env bash
# ab.sh runs scripts/bench/ab: every figure measured against its reference in
# the same run, with the same franz-go client, alternated round by round, and
# printed as a ratio (README "Performance" says what each shows).
#
#   scripts/bench/ab.sh kfake   [ab kfake flags]    ktool (on disk) vs kfake (in memory): produce and consume
#   scripts/bench/ab.sh durable [ab durable flags]  log.flush.interval.messages=1 vs dd oflag=dsync, same disk
#   scripts/bench/ab.sh consume [ab consume flags]  1 KiB consume vs loopback TCP; 1 and 2 consumer processes
#   scripts/bench/ab.sh tail    [ab tail flags]     acks=all at RF=3 on 3 brokers (ZooKeeper mode): p99/p50
#                                                   at half the maximum rate over 60 s
#   scripts/bench/ab.sh short                        a few seconds of each (what CI runs)
#
# Everything runs on 127.0.0.1; everything started here is stopped on exit.
# KTOOL_AB_KEEP=1 keeps the work directory (binaries, broker logs).
set -euo pipefail

mode="${1:-}"
[[ $# -gt 0 ]] && shift
case "$mode" in
kfake | durable | consume | tail | short) ;;
*)
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
	exit 2
	;;
esac

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/ktool-ab.XXXXXX")"
pids=()
cleanup() {
	local i pid
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		pid="${pids[i]}"
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	done
	if [[ -n "${KTOOL_AB_KEEP:-}" ]]; then log "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
log() { echo "ab.sh: $*" >&2; }
die() { echo "ab.sh: $*" >&2; exit 1; }

log "$(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, uptime:$(uptime | sed 's/.*load/ load/')"
log "building into $work"
(cd "$repo" && go build -o "$work/ktool" ./cmd/ktool && go build -o "$work/kfake" ./scripts/bench/kfake &&
	go build -o "$work/ab" ./scripts/bench/ab && go build -o "$work/loopback" ./scripts/bench/loopback &&
	go build -o "$work/failover" ./scripts/bench/failover) || die "build failed"

wait_line() { # FILE PATTERN PID: up to 120 s
	for _ in $(seq 1 1200); do
		grep -q -e "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

free_port() {
	local port
	for _ in $(seq 1 100); do
		port=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	die "no free port"
}

# tail_run ARGS...: ZooKeeper and three brokers, then ab tail against them.
tail_run() {
	local zk_port zk_pid cluster_pid brokers
	zk_port="$(free_port)"
	"$work/failover" zookeeper --dir "$work/zk" --port "$zk_port" >"$work/zk.out" 2>"$work/zk.log" &
	zk_pid=$!
	pids+=("$zk_pid")
	wait_line "$work/zk.out" "^ready" "$zk_pid" || { cat "$work/zk.log" >&2; die "ZooKeeper did not start"; }
	"$work/failover" cluster --ktool "$work/ktool" --dir "$work/brokers" --zookeeper "127.0.0.1:$zk_port/ab" --brokers 3 \
		--override zookeeper.session.timeout.ms=6000 >"$work/cluster.out" 2>"$work/cluster.log" &
	cluster_pid=$!
	pids+=("$cluster_pid")
	wait_line "$work/cluster.out" "^brokers=" "$cluster_pid" || { tail -n 40 "$work/cluster.log" >&2; die "brokers did not start"; }
	brokers="$(awk -F= '$1 == "brokers" { print $2; exit }' "$work/cluster.out")"
	log "three brokers on $brokers"
	"$work/ab" tail --brokers "$brokers" "$@"
}

case "$mode" in
kfake) "$work/ab" kfake --ktool "$work/ktool" --kfake "$work/kfake" --dir "$work/kfake-run" "$@" ;;
durable) "$work/ab" durable --ktool "$work/ktool" --dir "$work/durable-run" "$@" ;;
consume) "$work/ab" consume --ktool "$work/ktool" --loopback "$work/loopback" --dir "$work/consume-run" "$@" ;;
tail) tail_run "$@" ;;
short)
	"$work/ab" kfake --ktool "$work/ktool" --kfake "$work/kfake" --dir "$work/kfake-run" \
		--records 20000 --rounds 1 --partitions 1,6 --acks 1,all
	"$work/ab" durable --ktool "$work/ktool" --dir "$work/durable-run" --records 500 --dd-blocks 200 --rounds 1 \
		--partitions 1 --producers 1,4 --acks 1 --serial
	"$work/ab" consume --ktool "$work/ktool" --loopback "$work/loopback" --dir "$work/consume-run" \
		--records 20000 --rounds 1 --loopback-duration 1s
	tail_run --probe-records 20000 --duration 3s
	;;
esac
