# The two commands of the quick start: `make demo` and `make test`. Everything else supports them.
# The README names Python 3.11: python3.11 when it is on PATH, else python3 (`make PYTHON=...` to choose).
PYTHON ?= $(shell command -v python3.11 2>/dev/null || echo python3)
VENV := .venv
BIN := $(VENV)/bin
DEMO_STAMP := $(VENV)/.demo-installed
STAMP := $(VENV)/.installed

.PHONY: demo test check lint format protos bench clean browser

# seldon-core goes beside the environment, not in it (its pins, protobuf<4 and numpy<2, do not fit
# inferd's): the Seldon tests put it on PYTHONPATH to run user code that imports it. deepaas too,
# without its dependencies (aiohttp-apispec pins apispec<4): the DEEPaaS tests do the same.
# The demo needs inferd and scikit-learn only; the tests want the rest (TensorFlow, Ray, ...: gigabytes).
$(DEMO_STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[demo]'
	$(BIN)/python -m compileall -q inferd  # pip -e compiles nothing: see bench/README.md, Cold start
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP)
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet --no-deps --target $(VENV)/seldon-core 'seldon-core==1.18.2'
	$(BIN)/pip install --quiet --no-deps --target $(VENV)/deepaas 'deepaas==2.6.0'
	touch $(STAMP)

## Install inferd (and scikit-learn) and serve the bundled iris example on http://127.0.0.1:8080 (gRPC on 8081).
demo: $(DEMO_STAMP)
	$(BIN)/inferd serve examples/iris

## Install inferd with its test dependencies, then run the linters and the whole test suite.
test: $(STAMP) lint browser
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy inferd
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

protos: $(STAMP)
	PATH=$(BIN):$$PATH sh scripts/generate_protos.sh

## Run every benchmark section (small JSON, gRPC, big tensors, memory, cold start) and sum up the targets.
bench: $(STAMP)
	$(BIN)/python bench/sections.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache

# The browser tests drive Debian's Chromium headless (never a browser download); the platform's
# HAProxy data path is tested against Debian's haproxy; the alert rules in docs/observability are
# checked by Debian's promtool (package prometheus).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null 2>&1 && command -v haproxy >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium haproxy prometheus; }
