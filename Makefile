# decigraph: `make serve` and `make test` each set everything up from a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DATA_DIR ?= ./data
PACKAGES := graph retrieval service

.PHONY: install serve test lint typecheck unit bench clean

install: $(STAMP)

# torch is pinned to the CPU build in constraints.txt; scripts/torch-index-flags.sh adds
# PyTorch's CPU index only when pip cannot already see that wheel (override: TORCH_CPU_INDEX=...).
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet $$(scripts/torch-index-flags.sh $(PY)) -c constraints.txt -e ".[dev]"
	touch $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/decigraph serve --data-dir $(DATA_DIR)

lint: $(STAMP)
	$(VENV)/bin/ruff check $(PACKAGES) tests bench
	$(VENV)/bin/ruff format --check $(PACKAGES) tests bench

typecheck: $(STAMP)
	$(VENV)/bin/mypy $(PACKAGES)

unit: $(STAMP)
	$(PY) -m pytest

test: lint typecheck unit

bench: $(STAMP)
	$(PY) bench/bench_graph.py
	$(PY) bench/bench_salience.py
	$(PY) bench/bench_keyword.py
	$(PY) bench/bench_locomo.py
	$(PY) bench/bench_recall.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
