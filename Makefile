PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo lint soak bench bench-latency bench-peers clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

soak: $(STAMP)
	$(BIN)/python -m pytest -q -m soak

demo: $(STAMP)
	$(BIN)/python examples/demo.py

bench: $(STAMP)
	$(BIN)/python benchmarks/throughput.py

bench-latency: $(STAMP)
	$(BIN)/python benchmarks/checkpoint_latency.py

# the same job shapes on PyFlink 2.3 too (installed on demand into .bench/pyflink-venv)
bench-peers: $(STAMP)
	$(BIN)/python benchmarks/checkpoint_latency.py --peers

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
