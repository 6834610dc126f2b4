#!/bin/sh
# Installs what the compatibility tests in test/compat drive: kcat (librdkafka's
# CLI) and confluent-kafka-python (from the distribution's packages; needs root)
# and kafkajs (npm ci from the
# committed package-lock.json). The tests never download anything themselves.
set -eu

here=$(cd "$(dirname "$0")" && pwd)

# kcat, and confluent-kafka-python for /usr/bin/python3 (the distribution's
# python3-confluent-kafka, built on the same librdkafka).
need=""
command -v kcat >/dev/null 2>&1 || need="kcat"
/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || need="$need python3-confluent-kafka"
if [ -z "$need" ]; then
	echo "kcat: $(kcat -V 2>&1 | sed -n 's/^Version //p'); confluent-kafka-python: $(/usr/bin/python3 -c 'import confluent_kafka; print(confluent_kafka.version()[0])')"
elif command -v apt-get >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup.sh: installing$need needs root (apt-get); run it with sudo, or install them yourself" >&2
		exit 1
	fi
	apt-get update
	# shellcheck disable=SC2086 # one word per package
	DEBIAN_FRONTEND=noninteractive apt-get install -y $need
elif command -v brew >/dev/null 2>&1; then
	brew install kcat
	echo "setup.sh: install confluent-kafka-python for python3 yourself (pip install confluent-kafka)" >&2
else
	echo "setup.sh: no apt-get or brew here; install$need by hand" >&2
	exit 1
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "setup.sh: npm is missing; install Node.js 18 or later, then run this again" >&2
	exit 1
fi
cd "$here/kafkajs"
npm ci --no-audit --no-fund
echo "ready: go test ./test/compat/"
