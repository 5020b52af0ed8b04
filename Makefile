PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo lint soak bench bench-smoke bench-latency bench-peers clean browser cluster-test \
	kafka kafka-jars

# uv installs the dependencies (pip only installs uv): on 2026-11-30 a fresh clone's install
# took 105 s with uv's cache warm (load 12-14) against 663 s with pip's (load 16-25) on this
# 2-core machine; the suite's budget (20 minutes) includes it
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q 'uv>=0.5'
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[test]'
	touch $(STAMP)

# the dashboard's tests drive Debian's headless Chromium (they must run in CI): `make test`
# installs it and its driver when missing (apt; as root, or through sudo); `make demo` does not
# need them
browser:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || { \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium chromium-driver; }

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy

# Kafka's broker (tools/kafka_broker.py): its jars come from Maven Central once, into the
# ignored .cache/kafka/<version>/libs; the Kafka tests start the broker themselves (or use
# UNDERTOW_KAFKA_BOOTSTRAP); `make kafka` runs one in the foreground for a person
kafka-jars: $(STAMP)
	$(BIN)/python tools/kafka_broker.py --fetch

kafka: kafka-jars
	$(BIN)/python tools/kafka_broker.py

# The test runs write Python's bytecode cache (__pycache__, ignored by git) even where
# PYTHONDONTWRITEBYTECODE is set: they start hundreds of interpreters (CLI runs, docs blocks,
# jobs on other masters, fork servers), each of which would compile undertow from source
# again (0.5 s each here). docs/testing.md, "Bytecode cache".
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

# The restore controls (docs/testing.md, "Controls"): a test marked `restores` runs again with
# its restores losing their snapshot and must fail with RestoreEvidenceMissing; each partial
# control runs marked tests that declare they catch it. `make test` runs CONTROL_SAMPLE marked
# tests under the full control (0: every one) and PARTIAL_SAMPLE per partial control, one
# deployment target each, drawn with a seed it prints (UNDERTOW_CONTROL_SEED replays it).
# `make soak` runs every marked test on every target under every control.
CONTROL := $(PYTEST) -q tests/e2e tests/cli --durations=5 --restore-control
PARTIAL_CONTROLS := channel-state source-positions keyed-state operator-state shared-file
CONTROL_SAMPLE ?= 6
PARTIAL_SAMPLE ?= 1
# TEST_WORKERS > 0: that many pytest-xdist processes share the tests (tests/conftest.py keeps
# those sharing the Spark context, the Kafka broker or tests/cluster's namespaces on one, and
# each other module on one); 2 by default (the suite's budget: 20 minutes on 2 cores); 0: one
# process. docs/testing.md, "In parallel".
TEST_WORKERS ?= 2
PARALLEL := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

# `make test` runs each e2e test on one of its deployment targets, drawn per test from a seed
# printed last (UNDERTOW_TARGET_SEED replays it); `make soak` runs every test on every target
test: lint browser kafka-jars
	$(PYTEST) -q --durations=25 --target-sample=1 $(PARALLEL)
	$(CONTROL)=all --restore-control-one-target --restore-control-sample=$(CONTROL_SAMPLE) \
		$(PARALLEL)
	$(CONTROL)=each-partial --restore-control-one-target \
		--restore-control-sample=$(PARTIAL_SAMPLE) $(PARALLEL)

# the multi-host scenarios: Spark standalone hosts in network namespaces (root and iproute2)
cluster-test: $(STAMP) kafka-jars
	$(PYTEST) -q -m "" tests/cluster

soak: $(STAMP) kafka-jars
	$(PYTEST) -q -m "" --durations=25
	$(CONTROL)=all -m restores
	for kind in $(PARTIAL_CONTROLS); do $(CONTROL)=$$kind -m restores || exit 1; done

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# every script of benchmarks/ run once at a tiny size, one at a time (tests/benchmarks/smoke.py;
# docs/testing.md, "Benchmarks still run"): a script that no longer runs makes its figures in
# the docs unverifiable. `make soak` runs these tests too (its -m "" selects every test).
bench-smoke: $(STAMP) kafka-jars
	$(PYTEST) -q --durations=0 -m bench_smoke tests/benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/throughput.py

bench-latency: $(STAMP)
	$(BIN)/python benchmarks/checkpoint_latency.py

# the same job shapes on PyFlink 2.3 too (installed on demand into .bench/pyflink-venv)
bench-peers: $(STAMP)
	$(BIN)/python benchmarks/checkpoint_latency.py --peers

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
