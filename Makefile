# The only entry points. `make serve` runs the main job, `make test` is what CI runs (.ci/run).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# Stands for "the venv has the package and its test tools": every target that runs a tool from
# the venv depends on it, so each works on a fresh clone (made again when pyproject.toml changes).
INSTALLED := $(VENV)/.installed
PROTO := fixtures/a2a.proto
GENERATED := generated/__init__.py generated/types.py generated/methods.py generated/_support.py generated/_values.py
CODEGEN_SOURCES := $(wildcard codegen/*.py codegen/support/*.py codegen/templates/*.j2)
SRC := runtime generated codegen tests benchmarks examples

.PHONY: install proto generate check-generated interop-table fmt lint typecheck test check serve clean inspector-screenshot

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Editable install in "strict" mode: a link tree that mypy can follow (the default mode uses an
# import hook it cannot). Re-run after adding a module; `make test` always does. setuptools
# warns of that mode's build/ folder in a box on every install: EDITABLE drops that one warning
# (pip re-raises the backend's warnings in its own process) and leaves the others.
EDITABLE := PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q -e
install: $(PY)
	$(EDITABLE) ".[test]" --config-settings editable_mode=strict
	@touch $(INSTALLED)

$(INSTALLED): pyproject.toml | $(PY)
	$(EDITABLE) ".[test]" --config-settings editable_mode=strict
	@touch $@

# The main job: install the package (editable, as `install` does) with its command line (the
# cli extra, not the test tools) and run `a2a-wire serve` on the embedded default
# (127.0.0.1:8765), or e.g. `make serve ARGS="--config examples/serve.toml"`. Ctrl-C stops it.
# EXTRAS adds extras of pyproject.toml beside cli: `make serve EXTRAS=postgresql` (asyncpg, for
# storage = "postgresql"), `EXTRAS=postgresql,signing`, `EXTRAS=otlp` ([telemetry] export),
# `EXTRAS=prometheus` ([telemetry] prometheus_port).
ARGS ?=
EXTRAS ?= cli
comma := ,
space := $(subst x, ,x)
# cli and EXTRAS, each once: "cli,postgresql"
SERVE_EXTRAS = $(subst $(space),$(comma),$(sort cli $(subst $(comma),$(space),$(EXTRAS))))
serve: $(PY)
	PYTHONWARNINGS=ignore $(PY) -m pip install -q -e ".[$(SERVE_EXTRAS)]" --config-settings editable_mode=strict
	$(BIN)/a2a-wire serve $(ARGS)

proto:
	$(PYTHON) -m codegen.fetch_proto --out $(PROTO)

$(PROTO):
	$(PYTHON) -m codegen.fetch_proto --out $(PROTO)

$(GENERATED) &: $(PROTO) $(CODEGEN_SOURCES) | $(INSTALLED)
	$(PY) -m codegen --proto $(PROTO) --out generated

generate: proto $(INSTALLED)
	$(PY) -m codegen --proto $(PROTO) --out generated

check-generated: proto $(INSTALLED)
	@tmp=$$(mktemp -d) && $(PY) -m codegen --proto $(PROTO) --out $$tmp \
	  && diff -r --exclude=__pycache__ $$tmp generated && rm -rf $$tmp \
	  && echo "generated/ is up to date"

# docs/interop.md holds the outcomes of the interop tests (tests/interop/). `make test` only
# compares it with what they find (tests/interop/test_table.py); this target writes it.
interop-table: proto $(INSTALLED)
	$(BIN)/pytest -q -p no:cacheprovider tests/interop --write-interop-table

fmt: $(INSTALLED)
	$(BIN)/ruff format $(SRC)
	$(BIN)/ruff check --fix $(SRC)

lint: $(INSTALLED)
	$(BIN)/ruff format --check $(SRC)
	$(BIN)/ruff check $(SRC)

typecheck: $(INSTALLED)
	$(BIN)/mypy -p a2a_wire -p codegen

check: lint typecheck check-generated

# The tests run on TEST_WORKERS processes (pytest-xdist, `--dist loadgroup` in pyproject.toml;
# which tests share a worker and what starts first: tests/conftest.py). On a shared 2-core
# machine tests/cli took 163 s on 2 workers, 194 s on 3, 92 s on 4 (a worker often waits for a
# subprocess or the database); the whole suite 320 s on 4, 1022 s in one process.
# `make test TEST_WORKERS=0` runs them in one process. A run that collects no test fails (exit 5).
TEST_WORKERS ?= 4
# Tests marked `alone` (the database-fault suite: it bounds how long requests are held during a
# fault) run after the others, in one process with nothing beside it; all are slow tests, so
# only when those run (CI, or A2A_WIRE_SLOW_TESTS=1).
test: install proto check
	$(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) -m "not alone"
	@if [ -n "$${CI:-}$${A2A_WIRE_SLOW_TESTS:-}" ]; then \
	  echo "$(BIN)/pytest -q -p no:cacheprovider -m alone"; \
	  $(BIN)/pytest -q -p no:cacheprovider -m alone; fi

# Refresh docs/inspector.png from a real run of the inspector's browser test (needs Debian's
# chromium, see docs/inspector.md). A plain test run never writes a tracked file.
inspector-screenshot: install
	A2A_WIRE_REQUIRE_BROWSER=1 A2A_WIRE_INSPECTOR_SCREENSHOT=$(CURDIR)/docs/inspector.png \
	  $(BIN)/pytest -q -p no:cacheprovider tests/functional/inspector/test_inspector_browser.py -k screenshot

# The documentation site (mkdocs.yml): the guides of docs/ and the API reference from the
# docstrings, built into site/ (git-ignored) with --strict: a broken link or reference fails.
# docs-serve rebuilds it on every change and serves it on http://127.0.0.1:8000.
.PHONY: docs docs-serve
docs: $(INSTALLED)
	$(BIN)/mkdocs build --strict

docs-serve: $(INSTALLED)
	$(BIN)/mkdocs serve

clean:
	rm -rf build $(VENV) .mypy_cache .ruff_cache .pytest_cache
