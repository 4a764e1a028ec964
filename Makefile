# The README's two set-up commands live here. Both create (or reuse) .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test

.PHONY: test test-fast check venv lint docs bench demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python setup.py pyproject.toml scrapy_fresh/_speedups.c
	$(BIN)/python -m pip install --quiet -e '.[test,docs,dev]'
	touch $(STAMP)

venv: $(STAMP)

# What CI runs (.ci/run): the checks that are quick and fail early, then every test.
test: check
	$(BIN)/python -m pytest -q -n 2

# The everyday loop: no real-site crawls on nginx, no tests marked slow; two workers.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not realsite and not slow"

# Lint, format, strict typing and the docs (warnings are errors).
check: lint docs

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The demo: the demo site at 3600x, the example project's spiders for 8 cycles, the report.
demo: $(STAMP)
	$(BIN)/python -m scrapy_fresh.demo.driver --project example_project --cycles 8 \
		--speed 3600 --report demo-report.html

docs: $(STAMP)
	$(BIN)/sphinx-build -W -q -b html docs docs/_build/html

bench: $(STAMP)
	$(BIN)/python bench/fingerprint.py
	$(BIN)/python bench/store.py
	$(BIN)/python bench/visit_commits.py
	$(BIN)/python bench/redis_frontier.py
	$(BIN)/python bench/scheduler.py
	$(BIN)/python bench/url_key.py
	$(BIN)/python bench/headers.py
	$(BIN)/python bench/bandwidth.py
	$(BIN)/python bench/simulate.py
	$(BIN)/python bench/provider_signals.py
	$(BIN)/python bench/provider_visit.py
	$(BIN)/python bench/recrawl_visit.py
	$(BIN)/python bench/crawl.py
	$(BIN)/python bench/change_detection.py

clean:
	rm -rf $(VENV) docs/_build build *.egg-info
