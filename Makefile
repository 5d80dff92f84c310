# The two commands of the README. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# `make run`: a regular (non-editable) install, then the main job: the multi-abstraction comparison.
run: $(BIN)/python
	$(BIN)/python -m pip install --quiet .
	cd /tmp && $(CURDIR)/$(BIN)/ppverify compare --report /tmp/ppverify-report.html

# `make test`: editable install with the test extras (torch pinned to the CPU build, ray for sweeps).
test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,torch,ray,docs]"
	$(BIN)/python -m ppverify.engines.warm   # compile the numba kernels once (cached next to the module)
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)  # report tests: a real browser
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --quiet   # the manual (docs/) into site/, git-ignored
	$(BIN)/ruff check conftest.py ppverify tests scripts && $(BIN)/ruff format --check --quiet conftest.py ppverify tests scripts   # style ([tool.ruff])
	$(BIN)/lint-imports --no-cache   # the layering: one way down, no import cycles ([tool.importlinter])
	$(BIN)/mypy ppverify   # typed modules ([tool.mypy])
	$(BIN)/python -m pytest -q -n 2 -m "not slow"
	$(BIN)/python -m pytest -q -n 2 -m slow || [ $$? -eq 5 ]

clean:
	rm -rf $(VENV) build site *.egg-info
