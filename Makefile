# tiny-harness: `make run` sets everything up and runs it; `make test` runs every check.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONTROLPLANE = $(shell bash hack/controlplane/build.sh)
# pytest workers: the suite mostly waits on processes and the API, so two workers (each with a
# control plane of its own) finish in far less time on two cores; WORKERS=0 runs it in one.
WORKERS ?= 2
# The web UI: its npm dependencies (from the committed lock), and the assets vite builds into
# the package (tiny_harness/a2a_gateway/webui/), rebuilt when a source changes.
WEB_DEPS := web/node_modules/.installed
WEB_UI := tiny_harness/a2a_gateway/webui/index.html
WEB_SOURCES := $(shell find web/src web/public -type f 2>/dev/null) \
	web/index.html web/vite.config.ts web/tsconfig.json web/package.json

.PHONY: help prereqs prereqs-pytest prereqs-cluster install lock controlplane helm node web webtest run test \
	unit lint typecheck imports pytest generate krew bench clean cluster-test cluster

help:
	@echo "make run        set up a venv, build the local control plane, start it, the operator and the gateway"
	@echo "make test       ruff, mypy --strict, import contracts, the web UI's unit tests, the whole pytest suite"
	@echo "                and tests/cluster on a real local node (make cluster-test), the last two at once"
	@echo "make unit       the unit tests alone: no control plane, no browser, in about a minute"
	@echo "make web        build the web UI (npm ci, then vite) into the package; the gateway serves it at /ui/"
	@echo "make generate   regenerate the CRDs and the JSON Schemas from the models, and the krew manifest"
	@echo "make krew       build the archive the krew manifest names into dist/"
	@echo "make lock       update requirements.lock and requirements-dev.lock after a change to"
	@echo "                pyproject.toml's dependencies (UPGRADE=1: every pin to its newest release)"
	@echo "make bench      run the benchmarks under tests/bench and print their figures"
	@echo "make cluster    the chart on a real local node without Docker (root), until Ctrl-C"
	@echo "make cluster-test  build the image without Docker, start a real one-node cluster, helm install"
	@echo "                the chart and run tests/cluster against it (root; containerd, runc, buildah)"

# The venv holds exactly what requirements-dev.lock pins, each package checked against its hash,
# and the project itself (editable, nothing resolved again); pip check then proves the lock
# gives the project every dependency pyproject.toml names.
$(STAMP): pyproject.toml requirements-dev.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.lock
	$(BIN)/pip install --quiet --no-deps -e .
	$(BIN)/pip check
	touch $(STAMP)

install: $(STAMP) web

# The locks, from pyproject.toml: requirements.lock (what the package needs, the image installs
# it) and requirements-dev.lock (that, with the same pins, and the dev extra; make install uses
# it). Universal: one lock for Python 3.11 and later on every platform, with the hashes of every
# file of each pinned release. A plain `make lock` keeps each pin the bounds still allow and
# resolves only what changed; `make lock UPGRADE=1` takes the newest release of everything.
LOCK = $(BIN)/uv pip compile --quiet --generate-hashes --universal --python-version 3.11 \
	--custom-compile-command "make lock" $(if $(UPGRADE),--upgrade) pyproject.toml
lock:
	@[[ -x $(BIN)/uv ]] || $(MAKE) --no-print-directory $(STAMP)
	$(LOCK) -o requirements.lock
	$(LOCK) --extra dev --constraint requirements.lock -o requirements-dev.lock

$(WEB_DEPS): web/package-lock.json
	@bash hack/prereqs.sh check web
	cd web && npm ci --no-audit --no-fund
	touch $(WEB_DEPS)

$(WEB_UI): $(WEB_DEPS) $(WEB_SOURCES)
	cd web && npm run build

web: $(WEB_UI)

webtest: $(WEB_DEPS)
	cd web && npm run typecheck && npm test

# What the machine needs besides Python, in one list (hack/prereqs.sh; .ci/run installs it):
# make test checks all of it before its first step, pytest and cluster-test what they use, so
# a missing tool stops the run at once, naming the command that installs it, never halfway.
prereqs:
	@bash hack/prereqs.sh check

prereqs-pytest:
	@bash hack/prereqs.sh check web go tests

prereqs-cluster:
	@bash hack/prereqs.sh check web go cluster

# The pinned Go builds, each cached per pin: the control plane (and kubectl), helm (the chart's
# tests), and the node's binaries and CoreDNS (tests/cluster); built here rather than by the
# first test that needs one.
controlplane:
	@bash hack/prereqs.sh check go
	@bash hack/controlplane/build.sh >/dev/null

helm:
	@bash hack/prereqs.sh check go
	@bash hack/helm/build.sh >/dev/null

node: controlplane
	@bash hack/controlplane/build.sh --node >/dev/null
	@bash hack/coredns/build.sh >/dev/null

run: install controlplane web
	PATH="$(CONTROLPLANE):$$PATH" $(BIN)/tiny-harness up

lint: install
	$(BIN)/ruff check tiny_harness tests
	$(BIN)/ruff format --check tiny_harness tests

typecheck: install
	$(BIN)/mypy

imports: install
	$(BIN)/lint-imports

# --tb=native: Python 3.11.7's ast.parse can fail (SystemError) while pytest formats a failing
# test's traceback its own way, and the failure's report is lost in an INTERNALERROR.
pytest: prereqs-pytest install controlplane helm web
	PATH="$(CONTROLPLANE):$$PATH" $(BIN)/pytest -q -n $(WORKERS) --dist loadgroup --tb=native

# The chart on the local node, for people without Docker: runs until Ctrl-C (docs/design/node.md).
cluster: install controlplane web
	PATH="$(CONTROLPLANE):$$PATH" $(BIN)/python -m tiny_harness.devcluster.node_up

# The chart on a real node (tests/cluster): the image built with buildah, containerd, runc, the
# CNI bridge, a kubelet; the tests share one release, so they run in one process, in order.
# Part of make test; needs root and the packages .ci/run installs.
cluster-test: prereqs-cluster install node helm web
	TINY_HARNESS_NODE_TESTS=1 PATH="$(CONTROLPLANE):$$PATH" $(BIN)/pytest -q -n 0 --tb=native tests/cluster

# The unit suite needs no control plane: every layer tested against plain fakes.
unit: install
	$(BIN)/pytest -q -n $(WORKERS) tests/unit

# Everything, at once (hack/test.sh): pytest in front, the static checks and tests/cluster
# beside it, each with its log; every part's prerequisites are built first.
test: prereqs install controlplane helm node web $(WEB_DEPS)
	WORKERS=$(WORKERS) bash hack/test.sh

generate: install
	$(BIN)/python -m tiny_harness.kube.crd --write
	$(BIN)/python -m tiny_harness.core.schemas --write
	$(BIN)/python -m tiny_harness.core.commands.plugin_schemas --write
	$(BIN)/python -m tiny_harness.cli.krew --write

# The archive the krew manifest (plugins/krew/harness.yaml) names, for a release to upload.
krew: install
	$(BIN)/python -m tiny_harness.cli.krew --archive dist --check

bench: install controlplane
	@for b in tests/bench/bench_*.py; do echo "== $$b"; PATH="$(CONTROLPLANE):$$PATH" $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache web/node_modules tiny_harness/a2a_gateway/webui
