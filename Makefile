# Quick start: `make bench` (default CPU benchmark + HTML report) and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: bench test test-e2e test-serial test-fast docs install clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,jax,tf]"
	touch $(STAMP)

install: $(STAMP)

bench: $(STAMP)
	$(VENV)/bin/jitbench run --device cpu --size quick

# the suite without its end-to-end tier, on two processes (pytest-xdist; a module's tests stay
# in one process, so its shared runs are made once; files go out slowest first,
# tests/conftest.py); it builds the docs site as `make docs` does (tests/test_docs_build.py)
test: $(STAMP)
	$(PY) -m pytest -q -m "not e2e" -n 2 --dist loadfile --no-loadscope-reorder

# the end-to-end tier (tests/conftest.py's E2E_FILES): whole runs, nights, A/B runs and the
# nightly recipe, in one process so a timed A/B never shares the host with another test;
# .ci/run runs it after `make test`
test-e2e: $(STAMP)
	$(PY) -m pytest -q -m e2e

# both tiers in one process: to rule out two test processes disturbing a timed test
test-serial: $(STAMP)
	$(PY) -m pytest -q

# the unit tier: no child process, no framework import (tests marked `unit`), under a minute
# on two processes; its few slow tests (tests/conftest.py's SLOW_UNITS) run in make test
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "unit and not slow" -n 2 --dist loadfile --no-loadscope-reorder

docs: $(STAMP)
	DISABLE_MKDOCS_2_WARNING=true $(VENV)/bin/mkdocs build --strict
	@echo "site: site/index.html"

clean:
	rm -rf $(VENV) build site *.egg-info
