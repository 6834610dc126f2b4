#!/bin/sh
# Installs what the compatibility tests in test/compat drive: kcat (librdkafka's
# CLI, from the distribution's packages; needs root) and kafkajs (npm ci from the
# committed package-lock.json). The tests never download anything themselves.
set -eu

here=$(cd "$(dirname "$0")" && pwd)

if command -v kcat >/dev/null 2>&1; then
	echo "kcat: $(kcat -V 2>&1 | sed -n 's/^Version //p')"
elif command -v apt-get >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup.sh: installing kcat needs root (apt-get); run it with sudo, or install kcat yourself" >&2
		exit 1
	fi
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y kcat
elif command -v brew >/dev/null 2>&1; then
	brew install kcat
else
	echo "setup.sh: no apt-get or brew here; install kcat (librdkafka's CLI) by hand" >&2
	exit 1
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "setup.sh: npm is missing; install Node.js 18 or later, then run this again" >&2
	exit 1
fi
cd "$here/kafkajs"
npm ci --no-audit --no-fund
echo "ready: go test ./test/compat/"
