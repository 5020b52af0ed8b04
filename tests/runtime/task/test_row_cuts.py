"""The row cutter on its own: how many rows of a record batch one call of the head gets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.task.row_cuts import (
    FIRST_ROWS,
    MAX_PIECES,
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
    assert RowCutter().rows_for(0.002, BIG) == max(FIRST_ROWS, BIG // MAX_PIECES)
    assert RowCutter().rows_for(0.002, 1000) == FIRST_ROWS


def test_cuts_settle_where_a_call_takes_the_target() -> None:
    cutter = RowCutter()
    for _ in range(100):
        cutter.observe(2000, 2000 * 1e-7)  # 0.1 µs a row
    assert abs(cutter.rows_for(0.01, 320_000) - 100_000) <= 1
    assert abs(cutter.rows_for(0.0001, 320_000) - MIN_TARGET_S / 1e-7) <= 1


def test_a_batch_is_cut_into_at_most_max_pieces_whatever_the_fixed_cost() -> None:
    """A call costing 5 ms whatever its rows (pandas, a remote call) would make the time per
    row look ever larger as cuts shrink; the pieces stop at a MAX_PIECES-th of the batch."""
    cuts = _run(RowCutter(), 5e-3, 1e-7, 0.002, 100_000)
    assert len(cuts) <= MAX_PIECES and sum(cuts) == 100_000


def test_a_cut_never_goes_below_the_minimum() -> None:
    cutter = RowCutter()
    cutter.observe(256, 1.0)  # 4 ms a row
    assert cutter.rows_for(0.002, 1000) == MIN_ROWS


def test_a_preempted_call_moves_the_estimate_little() -> None:
    cutter = RowCutter()
    for _ in range(30):
        cutter.observe(2000, 2000 * 1e-6)
    cutter.observe(2000, 0.5)  # half a second: another process had the core
    assert cutter.rows_for(0.002, 32_000) >= 1000


@settings(max_examples=50, deadline=None)
@given(
    per_row=st.floats(1e-8, 1e-4), target=st.floats(MIN_TARGET_S, 0.02),
    total=st.integers(1, 2_000_000),
)  # fmt: skip
def test_settled_cuts_of_a_steady_cost_take_about_the_target(
    per_row: float, target: float, total: int
) -> None:
    """For calls costing ``rows * per_row``: every cut after the first takes at most about
    the target, unless held up by ``MIN_ROWS`` or ``MAX_PIECES``; every row is cut once."""
    cuts = _run(RowCutter(), 0.0, per_row, target, total)
    assert sum(cuts) == total and len(cuts) <= MAX_PIECES + 1
    floor = max(MIN_ROWS, -(-total // MAX_PIECES))
    assert all(rows <= max(floor, target / per_row * 1.01) for rows in cuts[1:])
