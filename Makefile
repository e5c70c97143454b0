# tiny-harness: `make run` sets everything up and runs it; `make test` runs every check.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONTROLPLANE = $(shell bash hack/controlplane/build.sh)

.PHONY: help install controlplane run test lint typecheck imports pytest generate bench clean

help:
	@echo "make run        set up a venv, build the local control plane, start it, the operator and the gateway"
	@echo "make test       ruff, mypy --strict, import contracts and the whole pytest suite"
	@echo "make generate   regenerate the CRDs and the JSON Schemas from the models"
	@echo "make bench      run the benchmarks under tests/bench and print their figures"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

controlplane:
	@bash hack/controlplane/build.sh >/dev/null

run: install controlplane
	PATH="$(CONTROLPLANE):$$PATH" $(BIN)/tiny-harness up

lint: install
	$(BIN)/ruff check tiny_harness tests
	$(BIN)/ruff format --check tiny_harness tests

typecheck: install
	$(BIN)/mypy

imports: install
	$(BIN)/lint-imports

pytest: install controlplane
	PATH="$(CONTROLPLANE):$$PATH" $(BIN)/pytest -q

test: lint typecheck imports pytest

generate: install
	$(BIN)/python -m tiny_harness.kube.crd --write
	$(BIN)/python -m tiny_harness.core.schemas --write
	$(BIN)/python -m tiny_harness.core.commands.plugin_schemas --write

bench: install controlplane
	@for b in tests/bench/bench_*.py; do echo "== $$b"; PATH="$(CONTROLPLANE):$$PATH" $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
