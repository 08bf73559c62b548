# dfsbench: `make demo` runs the main job on a throwaway local lab; `make test` runs the tests.
# Both install everything they need first (Debian packages, a virtualenv, the package).

VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin

.PHONY: demo test test-thorough test-unit docs deps test-deps system-deps venv lab-down clean

demo: deps
	$(BIN)/dfsbench run

test: test-deps
	BIN=$(BIN) bash scripts/run-tests

# the longer lab tests make test leaves out (setup.cfg's marker 'thorough'); CI runs them after make test
test-thorough: test-deps
	BIN=$(BIN) bash scripts/run-tests thorough

test-unit: test-deps
	$(BIN)/python -m pytest -ra -m "not lab" -n auto

deps: system-deps venv

test-deps: system-deps $(VENV)/.installed-test

system-deps:
	bash scripts/install-system-deps

venv: $(VENV)/.installed

# the package alone for the demo; with the test tools, in one install, for the tests
define install
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.$(1)'
endef

$(VENV)/.installed: setup.cfg pyproject.toml
	$(call install,)
	touch $@

$(VENV)/.installed-test: setup.cfg pyproject.toml
	$(call install,[test])
	touch $@ $(VENV)/.installed

# the documentation site (mkdocs.yml), built strict as make test builds it (into site/), then served
# on this machine only; scripts/reference.py writes its generated pages again after a change
docs: test-deps
	$(BIN)/mkdocs build --strict
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

lab-down: venv
	$(BIN)/dfsbench lab down

clean:
	rm -rf $(VENV) *.egg-info build site
