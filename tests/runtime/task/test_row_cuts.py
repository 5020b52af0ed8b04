"""The row cutter on its own: how many rows of a record batch one call of the head gets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.task.row_cuts import (
    DITHER,
    FIRST_ROWS,
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
    """A call costing 5 ms whatever its rows (pandas, a remote call): cutting to the target
    would pay 5 ms per piece; cuts grow until the fixed cost is at most MAX_FIXED_SHARE of a
    call, or the call MAX_STRETCH targets, and a batch smaller than that is not cut at all; a
    fixed cost above MAX_STRETCH targets gets only the rows that amortise it."""
    cutter = RowCutter()
    for _ in range(5):
        cuts = _run(cutter, 5e-3, 1e-7, 0.002, 40_000)
    assert cuts == [40_000]  # 9 ms: within MAX_STRETCH targets
    cuts = _run(cutter, 5e-3, 1e-7, 0.002, 10_000_000)
    calls = [5e-3 + rows * 1e-7 for rows in cuts[:-1]]  # the last piece is the rest
    assert all(call <= MAX_STRETCH * MIN_TARGET_S * 1.01 for call in calls)
    assert sum(calls) / len(calls) >= 0.7 * MAX_STRETCH * MIN_TARGET_S  # dithered: 3/4 of it
    huge = RowCutter()
    cuts = _run(huge, 0.05, 1e-7, 0.002, 10_000_000)
    assert all(0.05 / (0.05 + rows * 1e-7) <= MAX_FIXED_SHARE / DITHER for rows in cuts[2:-1])


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
