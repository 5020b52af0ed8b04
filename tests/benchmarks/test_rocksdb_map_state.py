"""benchmarks/rocksdb_map_state.py: its job runs on both backends (what it computes goes to a
discarding sink, unchecked here: the state tests check MapState), its target lines judge the
medians they are given, and its header names the engine's commit."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import rocksdb_map_state


@pytest.mark.parametrize("backend", rocksdb_map_state.BACKENDS)
def test_a_job_runs_on_each_backend(backend: str) -> None:
    assert rocksdb_map_state.run("large", backend, 2_000) > 0


def test_the_targets_read_the_small_ratio_and_the_growth_with_map_size() -> None:
    rates = {"small hashmap": 90.0, "small rocksdb": 30.0, "large rocksdb": 24.0}
    assert rocksdb_map_state.verdicts(rates) == [
        "target rocksdb-map-state small map: heap/RocksDB 3.00x (goal <= 3x): met",
        "target rocksdb-map-state large map: RocksDB 1,000-entry/7-entry rows/s 0.80 "
        "(goal >= 0.8): met",
    ]
    rates["small rocksdb"] = 29.0
    lines = rocksdb_map_state.verdicts(rates)
    assert lines[0].endswith("3.10x (goal <= 3x): missed") and lines[1].endswith(": met")
    rates["large rocksdb"] = 20.0
    assert rocksdb_map_state.verdicts(rates)[1].endswith("0.69 (goal >= 0.8): missed")


def test_the_encoder_costs_are_measured_on_equal_bytes() -> None:
    costs = rocksdb_map_state.encoder_ns(repeat=1_000)
    assert set(costs) == {"new pickler per key, tuple", "KeyEncoder, tuple", "KeyEncoder, str"}
    assert all(costs.values())


def test_the_header_names_the_engines_commit() -> None:
    assert re.match(r"[0-9a-f]{7,}(\+changes)? \(/", rocksdb_map_state.engine())


def test_op_ns_times_a_get_and_a_put_per_backend_and_map_key_type() -> None:
    costs = rocksdb_map_state.op_ns(repeat=128, runs=2)
    assert set(costs) == {f"{b} {k}" for b in rocksdb_map_state.BACKENDS
                          for k in rocksdb_map_state.OP_KEYS}  # fmt: skip
    assert all(ns > 0 for ns in costs.values())
