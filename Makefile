# dfsbench: `make demo` runs the main job on a throwaway local lab; `make test` runs the tests.
# Both install everything they need first (Debian packages, a virtualenv, the package).

VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin

.PHONY: demo test test-unit deps system-deps venv lab-down clean

demo: deps
	$(BIN)/dfsbench run

test: deps
	$(BIN)/lint-imports --no-cache --no-logo
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -ra

test-unit: venv
	$(BIN)/python -m pytest -ra -m "not lab"

deps: system-deps venv

system-deps:
	bash scripts/install-system-deps

venv: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

lab-down: venv
	$(BIN)/dfsbench lab down

clean:
	rm -rf $(VENV) *.egg-info build
