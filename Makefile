PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test lint plots perf mutation clean

install:  ## create .venv and install the project with CPU torch and dev tools
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -c constraints-cpu.txt -e '.[dev]'

test:  ## the fast, seeded test suite (CI runs exactly this)
	$(BIN)/python -m pytest -q -m "not slow and not slurm"

lint:
	$(BIN)/ruff check rlbase odt baselines benchmarks studies tests

plots:  ## regenerate every figure from results/
	$(BIN)/python -m benchmarks.plots

perf:  ## speed and memory benchmarks (prints a table, writes JSON)
	$(BIN)/python -m benchmarks.perf

mutation:  ## mutation testing of the core (hours: not in CI; MODULES="odt.relabel ..." for some) -> tests/MUTATION.md
	$(BIN)/pip install -c constraints-cpu.txt -e '.[dev,mutation]'
	$(BIN)/python scripts/mutation.py run $(MODULES)

clean:
	rm -rf $(VENV) .pytest_cache
