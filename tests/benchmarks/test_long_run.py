"""benchmarks/long_run.py: its growth figure and target lines."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import long_run
from long_run import Sample

MIB = 2**20


def test_growth_is_taken_over_the_second_half_per_1000_checkpoints() -> None:
    samples = [Sample(t, 100 * t, (90 + t) * MIB, 200 * MIB, 50 * MIB) for t in range(8)]
    # from sample 4 (400 checkpoints, 94 MiB) to sample 7 (700, 97 MiB): 3 MiB per 300
    assert long_run.growth_per_1000(samples, "driver") == (10.0, 300)
    assert long_run.growth_per_1000(samples, "workers") == (0.0, 300)


def test_the_run_ends_with_a_target_line_per_part_on_anonymous_memory(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # resident memory grows by library pages, anonymous memory by less (the half: t=2)
    resident = [(90 * MIB, (200 + 3 * t) * MIB, (50 + 2 * t) * MIB) for t in range(4)]
    anonymous = [(80 * MIB, (150 + t) * MIB, (40 + 2 * t) * MIB) for t in range(4)]
    samples = [Sample(t, 1000 * t, *resident[t], 0.0, *anonymous[t]) for t in range(4)]
    monkeypatch.setattr(long_run, "run", lambda *args: samples)
    monkeypatch.setattr(sys, "argv", ["long_run.py"])
    long_run.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[-4:] == [
        "over the second half, resident: driver +0.00 MiB, workers +3.00 MiB, bare loop "
        "(peer) +2.00 MiB",
        "over the second half, anonymous: driver +0.00 MiB, workers +1.00 MiB, bare loop "
        "(peer) +2.00 MiB",
        "target memory-driver: +0.00 MiB anonymous per 1,000 checkpoints over 1000 "
        "(goal <= 1.0 MiB): met",
        "target memory-workers: +1.00 MiB anonymous per 1,000 checkpoints over 1000 "
        "(goal <= 1.0 MiB): met",
    ]


def test_a_job_runs_and_is_sampled() -> None:
    samples = long_run.run(seconds=3.0, interval_ms=50, sample_s=1.0)
    assert len(samples) >= 3
    assert samples[-1].checkpoints > 0 and samples[-1].workers > 0 and samples[-1].loop > 0
    last = samples[-1]  # anonymous memory is part of the resident set
    assert 0 < last.workers_anon < last.workers and 0 < last.loop_anon < last.loop


def test_heap_growth_sums_each_workers_change_since_the_middle(tmp_path: Path) -> None:
    # time, heap size, in use, free (bytes); the first line is before the middle (t=10)
    (tmp_path / "1.txt").write_text("5 100 60 40\n10 200 80 120\n20 260 80 180\n")
    (tmp_path / "2.txt").write_text("11 100 50 50\n21 100 40 60\n")
    (tmp_path / "3.txt").write_text("12 999 999 0\n")  # one sample since: no change known
    assert long_run.heap_growth(tmp_path, since=10) == long_run.HeapGrowth(60, -10, 70)


def test_the_relaunch_environment_preloads_jemalloc_and_the_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(long_run.ctypes.util, "find_library", lambda name: f"lib{name}.so.2")
    env = long_run.relaunch_env("jemalloc", None)
    assert env["LD_PRELOAD"] == "libjemalloc.so.2" and env["PYTHONMALLOC"] == "malloc"
    assert env[long_run.RELAUNCHED] == "1" and "UNDERTOW_MALLOC_PROBE" not in env
    env = long_run.relaunch_env("system", "/tmp/probe", 2.0)
    assert "LD_PRELOAD" not in env or env["LD_PRELOAD"] == long_run.os.environ["LD_PRELOAD"]
    assert env["UNDERTOW_MALLOC_PROBE"] == "/tmp/probe"
    assert env["UNDERTOW_MALLOC_PROBE_S"] == "2.0"
    assert env["PYTHONPATH"].split(long_run.os.pathsep)[0] == str(long_run.PROBE_DIR)
    monkeypatch.setattr(long_run.ctypes.util, "find_library", lambda name: None)
    with pytest.raises(SystemExit, match="apt-get install libjemalloc2"):
        long_run.relaunch_env("jemalloc", None)
