"""benchmarks/columnar.py: its timed undertow runs measure the job, not a wait after it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import columnar


def test_a_bounded_run_ends_without_waiting_for_the_next_checkpoint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With a final checkpoint (FLIP-147) a bounded run waits for the next periodic trigger:
    here a minute, wall clock that steady_rate's difference of two runs would not cancel."""
    slow = {**columnar.CHECKPOINTS, "execution.checkpointing.interval": "60 s"}
    monkeypatch.setattr(columnar, "CHECKPOINTS", slow)
    start = time.monotonic()
    reported = columnar.undertow_columnar(20_000, 4096, str(tmp_path))
    took = time.monotonic() - start
    assert reported <= took < 45, f"the run took {took:.1f} s (reported {reported:.1f} s)"
