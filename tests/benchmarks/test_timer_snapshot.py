"""benchmarks/timer_snapshot.py: it snapshots and restores the timers it registered."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import timer_snapshot


def test_a_small_run_restores_every_timer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["timer_snapshot.py", "--timers", "500", "--keys", "50"])
    timer_snapshot.main()
    out = capsys.readouterr().out
    assert out.startswith("500 timers on 50 keys: snapshot") and "(500 timers)" in out
