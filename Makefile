# Common tasks. `make test` is what CI runs (scripts/test.sh).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: build test completions run bench snapshot chaos-long

build:
	go build -ldflags "$(LDFLAGS)" -o bin/ktool ./cmd/ktool

test:
	scripts/test.sh

completions:
	go run ./cmd/ktool completion generate --dir completions

run: build
	bin/ktool broker start --log-dirs ./ktool-data

bench:
	scripts/bench/bench.sh

snapshot:
	go run github.com/goreleaser/goreleaser/v2@v2.15.1 release --snapshot --clean --config goreleaser.yaml
