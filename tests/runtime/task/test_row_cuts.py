"""The row cutter on its own: how many rows of a record batch one call of the head gets."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.task.row_cuts import (
    DITHER,
    FIRST_ROWS,
    FIXED_STRETCH,
    MAX_FIXED_SHARE,
    MAX_STRETCH,
    MIN_ROWS,
    MIN_TARGET_S,
    RowCutter,
)

BIG = 10_000_000  # rows of a large batch


def _run(cutter: RowCutter, fixed: float, per_row: float, target: float, total: int) -> list[int]:
    """The cuts of one batch of ``total`` rows, each call costing ``fixed + rows * per_row``."""
    cuts: list[int] = []
    while sum(cuts) < total:
        rows = min(total - sum(cuts), cutter.rows_for(target, total))
        cutter.observe(rows, fixed + rows * per_row)
        cuts.append(rows)
    return cuts


def test_before_any_call_the_first_cut_is_small() -> None:
    assert RowCutter().rows_for(0.002, BIG) == FIRST_ROWS
    assert RowCutter().rows_for(0.002, 1000) == FIRST_ROWS


def test_cuts_settle_where_a_call_takes_the_target() -> None:
    cutter = RowCutter()
    for _ in range(100):
        cutter.observe(2000, 2000 * 1e-7)  # 0.1 µs a row, no fixed cost
    cuts = {cutter.rows_for(0.01, 320_000) for _ in range(2)}
    assert cuts == {100_000, int(100_000 * DITHER)}  # every other cut is the shorter one
    assert max(cutter.rows_for(0.00001, 320_000) for _ in range(2)) == int(MIN_TARGET_S / 1e-7)


def test_the_fit_tells_the_fixed_cost_from_the_cost_per_row() -> None:
    cutter = RowCutter()
    for _ in range(5):
        _run(cutter, 1e-3, 1e-6, 0.002, 50_000)
    assert abs(cutter.fixed_s - 1e-3) < 1e-5 and abs(cutter.per_row_s - 1e-6) < 1e-8  # type: ignore[operator]


def test_a_large_fixed_cost_is_amortised_not_cut_ever_finer() -> None:
    """A call costing 1 ms whatever its rows (pandas, a remote call): cutting to the target
    would pay 1 ms per piece; cuts grow until the fixed cost is at most MAX_FIXED_SHARE of a
    call, or the call MAX_STRETCH targets, and a batch smaller than that is not cut at all; a
    fixed cost above MAX_STRETCH / FIXED_STRETCH targets gets calls of FIXED_STRETCH fixed
    costs."""
    assert MAX_STRETCH * MIN_TARGET_S >= FIXED_STRETCH * 1e-3  # 1 ms: within MAX_STRETCH
    cutter = RowCutter()
    for _ in range(5):
        cuts = _run(cutter, 1e-3, 1e-7, 0.002, 40_000)
    assert cuts == [40_000]  # 5 ms: within MAX_STRETCH targets
    cuts = _run(cutter, 1e-3, 1e-7, 0.002, 10_000_000)
    calls = [1e-3 + rows * 1e-7 for rows in cuts[:-1]]  # the last piece is the rest
    assert all(call <= MAX_STRETCH * MIN_TARGET_S * 1.01 for call in calls)
    assert sum(calls) / len(calls) >= 0.7 * MAX_STRETCH * MIN_TARGET_S  # dithered: 3/4 of it
    huge = RowCutter()
    cuts = _run(huge, 0.05, 1e-7, 0.002, 10_000_000)
    calls = [0.05 + rows * 1e-7 for rows in cuts[2:-1]]
    assert all(0.05 * (1 + DITHER) * 0.99 <= call <= FIXED_STRETCH * 0.05 * 1.01 for call in calls)


def test_a_cut_never_goes_below_the_minimum() -> None:
    cutter = RowCutter()
    cutter.observe(256, 1.0)  # 4 ms a row
    assert cutter.rows_for(0.002, 1000) == MIN_ROWS


def test_a_preempted_call_moves_the_estimate_little() -> None:
    cutter = RowCutter()
    for _ in range(30):
        cutter.observe(2000, 2000 * 1e-6)
    cutter.observe(2000, 0.5)  # half a second: another process had the core
    assert max(cutter.rows_for(0.002, 32_000) for _ in range(2)) >= 1000


@settings(max_examples=50, deadline=None)
@given(
    per_row=st.floats(1e-8, 1e-4), fixed=st.sampled_from([0.0, 1e-5, 2e-4]),
    target=st.floats(MIN_TARGET_S, 0.02), total=st.integers(1, 2_000_000),
)  # fmt: skip
def test_settled_cuts_of_a_steady_cost_take_about_the_target(
    per_row: float, fixed: float, target: float, total: int
) -> None:
    """For calls costing ``fixed + rows * per_row``: every row is cut once, and every cut
    after the first takes at most about the target, or what amortises the fixed cost, unless
    held up by ``MIN_ROWS``."""
    cutter = RowCutter()
    cuts = _run(cutter, fixed, per_row, target, total) + _run(cutter, fixed, per_row, target, total)
    assert sum(cuts) == 2 * total
    stretch = MAX_STRETCH * target
    longest = (max(target, min(fixed / MAX_FIXED_SHARE, stretch)) if fixed < stretch
               else fixed / MAX_FIXED_SHARE) * 1.01 + per_row  # fmt: skip
    assert all(rows <= MIN_ROWS or fixed + rows * per_row <= longest for rows in cuts[1:])


def test_a_preempted_small_call_does_not_make_rows_look_free() -> None:
    """A small call slowed by preemption after a larger one: a line through them slopes
    down, and taken at face value it would say rows cost nothing and hand the head whole
    batches; the fit keeps its fixed cost instead."""
    cutter = RowCutter()
    cutter.observe(256, 256 * 2e-6)
    cutter.observe(64, 0.005)  # clipped to 4x its prediction
    assert max(cutter.rows_for(0.002, 100_000) for _ in range(2)) * 2e-6 <= 0.01


def _fitted(fixed: float, per_row: float) -> RowCutter:
    """A cutter that saw calls of two sizes costing exactly ``fixed + rows * per_row``."""
    cutter = RowCutter()
    for _ in range(10):
        for rows in (1000, 3000):
            cutter.observe(rows, fixed + rows * per_row)
    return cutter


def _full_cut(cutter: RowCutter, target: float, total: int) -> int:
    """The rows of a cut that is not the dithered one (every other cut is)."""
    return max(cutter.rows_for(target, total) for _ in range(2))


@settings(max_examples=200, deadline=None)
@given(
    fixed=st.floats(0.0, 0.2), per_row=st.floats(1e-7, 1e-4),
    target=st.floats(1e-4, 0.02), total=st.integers(1, 10_000_000),
)  # fmt: skip
def test_a_call_is_bounded_and_not_dominated_by_the_fixed_cost(
    fixed: float, per_row: float, target: float, total: int
) -> None:
    """Whatever the fixed cost (a load-inflated one too: it is measured in wall time), a cut's
    call takes at most about the longer of MAX_STRETCH targets and FIXED_STRETCH fixed costs
    (the old rule gave ten fixed costs above MAX_STRETCH targets: whole batches), and the
    fixed cost is at most the larger of MAX_FIXED_SHARE and 1 / FIXED_STRETCH of it (the old
    rule cut to MIN_ROWS just below)."""
    cutter = _fitted(fixed, per_row)
    rows = _full_cut(cutter, target, total)
    call = fixed + rows * per_row
    longest = max(MAX_STRETCH * max(target, MIN_TARGET_S), FIXED_STRETCH * fixed)
    if MIN_ROWS < rows < total:
        assert call <= longest * 1.001 + per_row
    if rows < total:
        assert fixed <= (call + per_row) * max(MAX_FIXED_SHARE, 1 / FIXED_STRETCH) * 1.001


def test_the_call_grows_continuously_with_the_fixed_cost() -> None:
    """Sweeping the fixed cost from nothing to 20 targets: the call a full cut makes never
    shrinks and grows at most 1 / MAX_FIXED_SHARE times as fast as the fixed cost, so never
    jumps (the old rule jumped from MIN_ROWS to ten fixed costs at MAX_STRETCH targets)."""
    per_row, target, step = 25e-6, 0.005, 0.00025
    calls = []
    for i in range(401):
        fixed = i * step
        calls.append(fixed + _full_cut(_fitted(fixed, per_row), target, 10_000_000) * per_row)
    for shorter, longer in itertools.pairwise(calls):
        assert shorter - 2 * per_row <= longer <= shorter + step / MAX_FIXED_SHARE + 2 * per_row
