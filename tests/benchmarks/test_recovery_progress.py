"""benchmarks/recovery_progress.py: a run's records committed after its first restore are what
the job committed once in the cycle of restores and kills, the figure the issue's target reads
("off commits nothing" there), not its records per minute over the whole run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from .smoke import assert_targets, lines_after, run_script

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
_spec = importlib.util.spec_from_file_location(
    "recovery_progress_benchmark", BENCHMARKS / "recovery_progress.py"
)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["recovery_progress_benchmark"] = bench  # dataclasses look their module up
_spec.loader.exec_module(bench)


def test_only_what_was_committed_after_the_first_restore_counts() -> None:
    run = bench.Run(False, committed=[(1.0, 0), (2.0, 500), (3.0, 900), (4.0, 900), (5.0, 900)])
    assert run.per_minute > 0  # the first attempt committed before its kill
    run.first_restore = 3.5
    assert run.after_first_restore == 0
    run.first_restore = 1.5
    assert run.after_first_restore == 900
    run.first_restore = 0.5  # before the first sample: all of it
    assert run.after_first_restore == 900


def test_a_run_without_a_restore_has_no_figure() -> None:
    assert bench.Run(True, committed=[(1.0, 0), (2.0, 10)]).after_first_restore is None


@pytest.mark.bench_smoke
@pytest.mark.timeout(900)
def test_the_script_still_runs_both_modes_and_pyflink_briefly() -> None:
    """tests/benchmarks/smoke.py: 8 s per mode with a failure every 3 s, and PyFlink's peer
    run (the venv of benchmarks/peers/pyflink_venv.py), make the three rows and both
    targets."""
    out = run_script("recovery_progress.py", "--duration", "8", "--kill-every", "3",
                     timeout=600)  # fmt: skip
    table = lines_after(out, "during-recovery ")[:3]
    assert [row[:22].strip() for row in table] == ["on", "off", "on (PyFlink)"], out
    assert "\nPyFlink 2.3 with both FLIP-547 options: " in out, out
    assert_targets(out, "progress-under-kills", "first-checkpoint-after-restore")
