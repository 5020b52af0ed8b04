"""benchmarks/record_path.py: the budget line (what a job at the record path's target ratio may
spend on the engine) comes from the pieces' figures, and compare_commits reads the table
without it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import record_path

from .smoke import run_script


def test_the_budget_is_the_loop_over_the_ratio_less_the_map_and_fold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ns = dict.fromkeys(record_path.pieces(), 0.0)
    ns |= {
        record_path.LOOP_CALLING: 210.0,
        "map (job's lambda)": 80.0,
        "sum: keys + fold into heap state": 190.0,
        "key_by routing, 2 channels": 70.0,
        "pickle the batch": 40.0,
        "unpickle the batch": 60.0,
    }
    record_path.print_budget(ns)
    out = capsys.readouterr().out
    assert out.startswith("\n"), "a blank line ends the table compare_commits reads"
    assert "0.7x that loop: 300.0 ns" in out
    assert "take 270.0, which leaves 30.0 for the engine" in out
    assert "routing takes 70.0" in out and "between workers 50.0" in out


def test_the_script_still_runs_each_piece_once() -> None:
    """tests/benchmarks/smoke.py: one repetition times every piece and prints the budget
    (the script sets no target; the budget line is what compare_commits --job pieces reads
    beside the table)."""
    out = run_script("record_path.py", "--repeat", "1")
    table = out.split("\n\n", 1)[0].splitlines()
    assert table[0].startswith("piece ") and "ns/record" in table[0], out
    assert [row[:32].strip() for row in table[1:]] == list(record_path.pieces()), out
    assert "\na job at 0.7x that loop: " in out, out
