# gradwalk — `make` lists the targets. `make run` and `make test` set up everything first.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The CPU build of PyTorch (a bare `torch` would pull a multi-GB CUDA build).
TORCH_SPEC ?= torch==2.13.0
HOST ?= 127.0.0.1
PORT ?= 8000
# pytest-xdist: one test process per core, at most 4 (each browser test process runs its own
# server and Chromium); `make test PYTEST_WORKERS=0` runs the suite in this one process.
PYTEST_WORKERS ?= auto
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --maxprocesses 4 --dist worksteal

.PHONY: help setup run test test-fast check fmt bench schema types web clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(VENV)/.stamp-py: pyproject.toml requirements-dev.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -r requirements-dev.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $@

web/node_modules/.stamp: web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund --loglevel=error
	touch $@

server/static/dist/.stamp: web/node_modules/.stamp $(shell find web/src -type f 2>/dev/null) engine/schema/trace.schema.json
	cd web && npm run --silent build
	touch $@

setup: $(VENV)/.stamp-py web ## create .venv, install pinned deps, build the web bundle

web: server/static/dist/.stamp ## build the frontend bundle (web/ -> server/static/dist)

run: setup ## start the app on http://$(HOST):$(PORT) (local workers, SQLite in var/)
	@echo "gradwalk: open http://$(HOST):$(PORT)/"
	$(VENV)/bin/gradwalk serve --host $(HOST) --port $(PORT)

test: setup ## run the whole test suite (engine, runner, server, browser, notebooks)
	$(PY) -m pytest -q $(PYTEST_PARALLEL) --durations=25

test-fast: setup ## run the tests without the browser and the slow ones
	$(PY) -m pytest -q $(PYTEST_PARALLEL) -m "not browser and not slow"

check: setup ## lint and type-check (ruff, mypy)
	$(VENV)/bin/ruff check engine server runner gradwalk tests bench
	$(VENV)/bin/ruff format --check engine server runner gradwalk tests bench
	$(VENV)/bin/mypy

fmt: setup ## format the Python code
	$(VENV)/bin/ruff format engine server runner gradwalk tests bench
	$(VENV)/bin/ruff check --fix engine server runner gradwalk tests bench

bench: setup ## benchmarks: recording overhead and latencies, as ratios to plain PyTorch
	$(PY) bench/run_all.py

schema: $(VENV)/.stamp-py ## regenerate the event JSON Schema and the TypeScript types from engine/events.py
	$(PY) -m engine.schema
	@if [ -d web/node_modules ]; then cd web && npm run --silent types; fi

clean: ## remove the venv, node_modules, builds and local data
	rm -rf $(VENV) web/node_modules server/static/dist var .pytest_cache .mypy_cache .ruff_cache
