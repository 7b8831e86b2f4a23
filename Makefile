# `make run` starts the product with demo data; `make test` runs the whole suite; `make bench` prints
# the benchmark table (bench/README.md).
# The virtualenv lives in .venv and is reinstalled only when a requirements file changes.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
MCP1 := $(VENV)/mcp1
PYTHON ?= $(shell command -v python3.13 || command -v python3)
export PORT ?= 8000

.PHONY: run test bench setup setup-test clean

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else "Python 3.13 is needed (see .python-version)")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.installed-run: requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements.txt
	@touch $@

$(VENV)/.installed-test: requirements.txt requirements-test.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements-test.txt
	@touch $@ $(VENV)/.installed-run

setup: $(VENV)/.installed-run
	$(PY) manage.py migrate --noinput
	@if [ "$$DJANGO_ENV" = production ]; then \
		echo "DJANGO_ENV=production: no demo data (create the first operator with manage.py createsuperuser)"; \
	else $(PY) manage.py seed_demo; fi

# The MCP SDK's previous major for api/tests/test_mcp_sdk.py: both majors are the distribution `mcp`.
$(MCP1)/.installed: api/tests/mcp_clients/requirements-sdk1.txt | $(VENV)/bin/python
	$(PYTHON) -m venv $(MCP1)
	$(MCP1)/bin/python -m pip install -q -r api/tests/mcp_clients/requirements-sdk1.txt
	@touch $@

setup-test: $(VENV)/.installed-test $(MCP1)/.installed

run: setup
	$(PY) manage.py serve

test: setup-test
	scripts/install-system-deps.sh
	$(VENV)/bin/lint-imports --no-cache
	$(PY) scripts/audit_dependencies.py
	$(PY) -m pytest

# Needs PostgreSQL on 127.0.0.1:5432 (trust auth) and Redis on 127.0.0.1:6379, as CI has them.
bench: setup-test
	scripts/install-system-deps.sh
	$(PY) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var
