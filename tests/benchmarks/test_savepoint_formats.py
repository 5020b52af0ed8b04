"""benchmarks/savepoint_formats.py still runs (tests/benchmarks/smoke.py): on a few thousand
keys one savepoint of each format is taken and restored, each format's row shows its take,
size, restore line and first record. The script sets no target."""

from __future__ import annotations

import pytest

from .smoke import lines_after, run_script


@pytest.mark.bench_smoke
def test_one_savepoint_of_each_format_is_taken_and_restored() -> None:
    out = run_script("savepoint_formats.py", "--keys", "4000", "--rounds", "1")
    table = lines_after(out, "format ")
    rows = [row.split() for row in table if row.strip()]
    assert [row[:2] for row in rows] == [["CANONICAL", "4,000"], ["NATIVE", "4,000"]], out
    assert all(len(row) == 7 for row in rows), out  # no figure missing
