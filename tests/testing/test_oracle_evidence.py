"""The oracle's evidence of attempts that did not finish (:mod:`undertow.testing._oracle_evidence`):
a line per anomaly per subtask, summed over every run but the finishing attempt's, and a cut
line named rather than skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from undertow.testing._oracle_evidence import (
    RUNS,
    EvidenceLog,
    other_runs_counts,
    publish_run,
)


def test_only_runs_outside_the_finishing_attempt_are_counted(tmp_path: Path) -> None:
    failed = EvidenceLog(str(tmp_path), "sink", 0, attempt=0, run=11)
    failed.record({"duplicates": 2, "corrupt": 0})
    failed.record({"duplicates": 1})
    finishing = EvidenceLog(str(tmp_path), "sink", 0, attempt=1, run=22)
    finishing.record({"duplicates": 5})
    EvidenceLog(None, "map", 1, attempt=1, run=33).record({"corrupt": 9})  # no directory
    accumulators: dict[str, Any] = {}
    publish_run(accumulators, 22)
    assert accumulators == {RUNS: (22,)}
    assert other_runs_counts(tmp_path, accumulators[RUNS]) == ({"duplicates": 3}, 1)
    assert other_runs_counts(None, ()) == ({}, 0)


def test_a_line_cut_by_a_kill_is_named(tmp_path: Path) -> None:
    (tmp_path / "sink-0-7.jsonl").write_text('{"run": 7, "counts": {"dup')
    with pytest.raises(ValueError, match=r"sink-0-7\.jsonl, line 1"):
        other_runs_counts(tmp_path, ())
