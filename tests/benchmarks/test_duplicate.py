"""benchmarks/duplicate.py still runs (tests/benchmarks/smoke.py): on a few thousand keys the
baseline, the duplicated and the re-uploaded first checkpoints make their rows, and the
target line ends the output."""

from __future__ import annotations

import pytest

from .smoke import assert_targets, run_script


@pytest.mark.bench_smoke
def test_the_three_rows_and_the_target_at_a_few_thousand_keys() -> None:
    out = run_script("duplicate.py", "--keys", "4000", "--samples", "1")
    rows = [line.split("|")[1].strip() for line in out.splitlines() if line.startswith("| ")]
    assert rows == [
        "checkpoint",
        "ordinary incremental (p50 of 1)",
        "first after NO_CLAIM, duplicate",
        "first after NO_CLAIM, re-upload",
    ], out
    assert_targets(out, "duplicate_first_checkpoint")
