"""Percentiles of benchmark figures: one helper for every script, its rule named at each call.

The scripts used to carry their own copies, by three rules that pick different values from
the same sample (the median of five values is the 3rd by the first rule, the 2nd by the
second). A figure in the docs compares only with a later run by its own rule, so each script
keeps its rule and names it:

* ``"nearest-rank"``: the smallest value with at least ``q`` of the values at or below it,
  the ``ceil(q * n)``-th in order (kafka_load.py, kafka_hops.py, kafka_harness.py; and, with
  a weight per value, columnar_latency.py's rows: :func:`weighted_percentiles`).
* ``"rounded-rank"``: the ``round(q * n)``-th in order (cluster.py).
* ``"nearest-index"``: the value at index ``round(q * (n - 1))`` in order, NumPy's
  ``method="nearest"`` (checkpoint_latency.py).

``round`` is Python's (half to even) in the last two, as the copies had it. No interpolation:
every figure is a value that was measured. The stdlib serves the rest: an interpolated p90 is
``statistics.quantiles`` (debloat.py, unaligned.py ...), columnar.py's median of rounds is
``statistics.median_high``. Pure functions; the scripts import this module by name, as they
import ``ab_sides``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, TypeVar, overload

Method = Literal["nearest-rank", "rounded-rank", "nearest-index"]
METHODS: tuple[Method, ...] = ("nearest-rank", "rounded-rank", "nearest-index")

_T = TypeVar("_T")
_RAISE: Any = object()


def _index(method: Method, q: float, n: int) -> int:
    """The 0-based position in sorted order of the ``q`` quantile of ``n`` values."""
    if method == "nearest-rank":
        rank = math.ceil(q * n)
    elif method == "rounded-rank":
        rank = round(q * n)
    elif method == "nearest-index":
        return min(n - 1, round(q * (n - 1)))
    else:
        raise ValueError(f"unknown percentile method {method!r}; one of {METHODS}")
    return min(n - 1, max(0, rank - 1))


@overload
def percentile(values: Sequence[float], q: float, method: Method) -> float: ...


@overload
def percentile(values: Sequence[float], q: float, method: Method, *, empty: _T) -> float | _T: ...


def percentile(values: Sequence[float], q: float, method: Method, *, empty: Any = _RAISE) -> Any:
    """The ``q`` quantile (0..1) of ``values`` by ``method`` (see the module docstring), as a
    float. ``empty`` is the answer for no values (None, NaN ...); without it none is an error."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"a quantile is between 0 and 1, got {q}")
    if not values:
        if empty is _RAISE:
            raise ValueError(f"no values to take the {q} quantile of")
        return empty
    ordered = sorted(values)
    return float(ordered[_index(method, q, len(ordered))])


def weighted_percentiles(values: Any, weights: Any, quantiles: Sequence[float]) -> list[float]:
    """``"nearest-rank"`` quantiles of NumPy array ``values`` where value ``i`` counts
    ``weights[i]`` times (a batch's latency once per row of it): for each ``q``, the smallest
    value with at least ``q`` of the total weight at or below it. ``values`` not empty; equal
    values keep their order (a stable sort)."""
    if not len(values):
        raise ValueError("no values to take quantiles of")
    order = values.argsort(kind="stable")
    ordered, cumulative = values[order], weights[order].cumsum()
    total = cumulative[-1]
    return [float(ordered[cumulative.searchsorted(q * total)]) for q in quantiles]
