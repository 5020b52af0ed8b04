"""benchmarks/row_access.py: the child times every statement on the row class it is given (the
peer's figures come from the same code in PyFlink's venv)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import row_access


def test_the_child_times_each_statement_and_the_users_loop() -> None:
    figures = row_access.measure(sys.executable, "undertow.common:Row", 20)
    assert row_access.LOOP in figures and "read a field by attribute, r.user" in figures
    assert len(figures) == 7 and all(ns > 0 for ns in figures.values())
    floor = row_access.namedtuple_floor(20)
    assert set(floor) < set(figures)
