"""benchmarks/percentiles.py: the three rules the scripts print their percentiles by, each
pinned to the formula of the copy it replaced (so the printed figures stay the same), and the
weighted nearest rank of columnar_latency.py's rows."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from percentiles import METHODS, percentile, weighted_percentiles

samples = st.lists(st.integers(-1000, 1000), min_size=1, max_size=60)
quantiles = st.sampled_from([0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0]) | st.floats(0, 1)


@given(samples, quantiles)
def test_each_rule_is_the_formula_of_the_copy_it_replaced(values: list[int], q: float) -> None:
    ordered, n = sorted(values), len(values)
    # kafka_load.py (and kafka_hops.py, kafka_harness.py through it)
    nearest_rank = ordered[min(n - 1, max(0, math.ceil(q * n) - 1))]
    # cluster.py
    rounded_rank = ordered[min(n - 1, max(0, round(q * n) - 1))]
    # checkpoint_latency.py
    nearest_index = ordered[min(n - 1, round(q * (n - 1)))]
    assert percentile(values, q, "nearest-rank") == nearest_rank
    assert percentile(values, q, "rounded-rank") == rounded_rank
    assert percentile(values, q, "nearest-index") == nearest_index


def test_the_rules_differ_where_the_docs_say() -> None:
    five = [50, 10, 40, 20, 30]
    assert [percentile(five, 0.5, m) for m in METHODS] == [30.0, 20.0, 30.0]
    four = [10, 20, 30, 40]
    assert [percentile(four, 0.5, m) for m in METHODS] == [20.0, 20.0, 30.0]
    hundred = list(range(1, 101))
    assert [percentile(hundred, 0.99, m) for m in METHODS] == [99.0, 99.0, 99.0]
    assert isinstance(percentile([4], 0.99, "nearest-rank"), float)


def test_no_values_is_an_error_unless_the_caller_names_the_answer() -> None:
    with pytest.raises(ValueError, match=r"no values to take the 0\.5 quantile of"):
        percentile([], 0.5, "nearest-rank")
    assert percentile([], 0.5, "nearest-index", empty=None) is None
    assert math.isnan(percentile([], 0.99, "rounded-rank", empty=float("nan")))


def test_a_bad_quantile_or_rule_is_named() -> None:
    with pytest.raises(ValueError, match="between 0 and 1, got 50"):
        percentile([1, 2], 50, "nearest-rank")
    with pytest.raises(ValueError, match="unknown percentile method 'linear'"):
        percentile([1, 2], 0.5, "linear")  # type: ignore[arg-type]


@given(st.lists(st.tuples(st.integers(0, 100), st.integers(1, 5)), min_size=1, max_size=30),
       quantiles)  # fmt: skip
def test_a_weight_counts_as_that_many_copies_of_its_value(
    pairs: list[tuple[int, int]], q: float
) -> None:
    values = np.array([float(v) for v, _ in pairs])
    weights = np.array([float(w) for _, w in pairs])
    repeated = [v for v, w in pairs for _ in range(w)]
    [picked] = weighted_percentiles(values, weights, [q])
    assert picked == percentile(repeated, q, "nearest-rank")


def test_weighted_percentiles_need_values() -> None:
    with pytest.raises(ValueError, match="no values"):
        weighted_percentiles(np.array([]), np.array([]), [0.5])
