#!/usr/bin/env bash
# TLS against plaintext consume throughput, side by side in one run: one
# standalone broker with a PLAINTEXT and an SSL listener, one topic, then
# `ktool perf consume` over each listener in turn (ROUNDS times, alternating).
# Fetch over TLS cannot use sendfile(2): the records are copied through the
# TLS writer. Prints one line per consume and the median ratio.
#
#   scripts/bench/tls.sh [-n RECORDS] [-s RECORD_SIZE] [-r ROUNDS]
set -euo pipefail
n=500000 size=1000 rounds=5
while getopts n:s:r: o; do
  case $o in
    n) n=$OPTARG ;; s) size=$OPTARG ;; r) rounds=$OPTARG ;;
    *) echo "usage: $0 [-n records] [-s record size] [-r rounds]" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/ktool" "$root/cmd/ktool"
k="$work/ktool"
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
p1=$(free) p2=$(free)
"$k" cert ca --dir "$work/pki" >/dev/null
"$k" cert broker broker --dir "$work/pki" >/dev/null
# A PEM keystore is the key and the chain in one file.
cat "$work/pki/broker.key" "$work/pki/broker.crt" >"$work/pki/broker.pem"
"$k" broker start --broker-id 0 --log-dirs "$work/data" \
  --listeners "PLAINTEXT://127.0.0.1:$p1,SSL://127.0.0.1:$p2" \
  --override ssl.keystore.type=PEM --override "ssl.keystore.location=$work/pki/broker.pem" \
  >"$work/broker.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "ready" "$work/broker.log" && break; sleep 0.2; done
grep -q ready "$work/broker.log" || { cat "$work/broker.log" >&2; echo "the broker did not start" >&2; exit 1; }
"$k" -b "127.0.0.1:$p1" perf produce --topic tls-bench --num-records "$n" --record-size "$size" --partitions 4 --acks 1 -o json >"$work/produce.json"
echo "produced $n records of $size bytes"
mb() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mb_per_sec"])' "$1"; }
# One unmeasured read first, so both listeners find the segments in the page cache.
"$k" -b "127.0.0.1:$p1" --timeout 5s perf consume --topic tls-bench --num-records "$n" -o json >/dev/null
ratios=()
for r in $(seq "$rounds"); do
  "$k" -b "127.0.0.1:$p1" --timeout 5s perf consume --topic tls-bench --num-records "$n" -o json >"$work/plain.json"
  "$k" -b "127.0.0.1:$p2" --tls-ca "$work/pki/ca.crt" --timeout 5s perf consume --topic tls-bench --num-records "$n" -o json >"$work/tls.json"
  a=$(mb "$work/plain.json") b=$(mb "$work/tls.json")
  ratio=$(python3 -c "print(round($b/$a, 2))")
  ratios+=("$ratio")
  printf 'round %s: plaintext %.1f MB/s, TLS %.1f MB/s, TLS/plaintext %s\n' "$r" "$a" "$b" "$ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print "median TLS/plaintext ratio: " a[int((NR+1)/2)]}'
