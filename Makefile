# decigraph: `make serve` and `make test` each set everything up from a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DATA_DIR ?= ./data
PACKAGES := graph retrieval service
UI := service/ui
UI_STAMP := $(UI)/node_modules/.installed

.PHONY: install ui serve test lint typecheck unit unit-fast soak bench notebooks sample clean judge judge-bench

install: $(STAMP) $(UI_STAMP)

# torch is pinned to the CPU build in constraints.txt; scripts/torch-index-flags.sh adds
# PyTorch's CPU index only when pip cannot already see that wheel (override: TORCH_CPU_INDEX=...).
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet $$(scripts/torch-index-flags.sh $(PY)) -c constraints.txt -e ".[dev]"
	touch $(STAMP)

# The explorer's JavaScript library (d3) comes from npm at the exact version in
# $(UI)/package-lock.json; `npm ci` installs just that, into $(UI)/node_modules (not committed).
ui: $(UI_STAMP)

$(UI_STAMP): $(UI)/package.json $(UI)/package-lock.json
	npm ci --prefix $(UI) --no-audit --no-fund
	touch $(UI_STAMP)

serve: $(STAMP) $(UI_STAMP)
	$(VENV)/bin/decigraph serve --data-dir $(DATA_DIR)

lint: $(STAMP)
	$(VENV)/bin/ruff check $(PACKAGES) tests bench scripts
	$(VENV)/bin/ruff format --check $(PACKAGES) tests bench scripts

typecheck: $(STAMP)
	$(VENV)/bin/mypy $(PACKAGES)

# Every test but the soak runs: tests/{unit,integration,e2e,fuzz} and graph/'s doctests.
# The PostgreSQL tests start real servers from /usr/lib/postgresql/*/bin (`apt-get install
# postgresql`, or DECIGRAPH_PG_BIN=<dir>); without them they fail, unless DECIGRAPH_SKIP_PG=1.
unit: $(STAMP) $(UI_STAMP)
	$(PY) -m pytest

# Only the tests marked unit (tests/unit and graph/'s doctests: fakes, no model, ChromaDB or
# server), in seconds; markers come from the directories (tests/conftest.py). Naming the
# two directories spares collecting (importing) the other suites only to deselect them.
unit-fast: $(STAMP)
	$(PY) -m pytest -m unit tests/unit graph

test: lint typecheck unit

# The long reliability runs (tests/soak: 60 s of load, a longer kill -9 loop); the later -m
# overrides the `-m 'not soak'` in pyproject's addopts. Figures in tests/artifacts/.
soak: $(STAMP)
	$(PY) -m pytest -m soak -s --timeout 1800 tests/soak

# Every benchmark, then BENCHMARKS.md from this run's JSON (bench/results/): ~30 min on 2 cores
# with the stores cached in bench/.cache, ~15 more to build them the first time
# (`$(PY) bench/run_all.py --quick`: the whole pipeline at small sizes in ~5 min).
bench: $(STAMP)
	$(PY) bench/run_all.py

# Train the contradiction pair judge from bench/judgedata/train.jsonl (seeded, ~12 min on 2
# cores): writes retrieval/contradiction/weights/ (weights, config, card.json with the digest,
# the thresholds picked on the dev split and the dev figures, MODEL_CARD.md) and prints them.
judge: $(STAMP)
	$(PY) scripts/train_judge.py

# The judge on the frozen test split, the dev split and the 540 old pairs, beside the grammar
# and cosine baselines: bench/results/judge.json (also a step of `make bench`).
judge-bench: $(STAMP)
	$(PY) bench/bench_judge.py

# Memory of a served store at 10k, 100k and 300k decisions, old and new representation, and
# the per-decision cost extrapolated to 1M: bench/results/large.json. A size without a seeded
# store in bench/.cache (or BENCH_LARGE_ARGS="--store 100000=DIR") is generated with random
# vectors instead of embeddings (built once, ~30 min for 300k on 2 cores; then ~20 min a run).
.PHONY: bench-large
bench-large: $(STAMP)
	$(PY) bench/bench_memory.py $(BENCH_LARGE_ARGS)

# The seeded sample store the notebooks read (DECIGRAPH_SAMPLE_DIR, default data/sample).
sample: $(STAMP)
	test -e data/sample/events.jsonl || $(VENV)/bin/decigraph sample --data-dir data/sample

# Re-run every notebook in place, refreshing the outputs that are committed with it.
notebooks: $(STAMP)
	$(PY) scripts/run_notebooks.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis $(UI)/node_modules
