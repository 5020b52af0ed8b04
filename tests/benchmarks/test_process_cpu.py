"""benchmarks/process_cpu.py: a group's CPU time takes in its roots' descendants, and an
excluded tree counts nowhere (the Kafka benchmark's CPU per record rests on both)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import process_cpu

#: the grandchild: burns 0.3 s of CPU, says so, and stays alive (an ended process's time
#: leaves /proc with it)
BURN = (
    "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    "print('burnt', flush=True)\ntime.sleep(30)\n"
)


def test_a_group_counts_its_descendants_and_not_an_excluded_tree() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, "
         f"'-c', {BURN!r}])"],
        stdout=subprocess.PIPE,
        start_new_session=True,  # the test ends the child and the grandchild together
    )  # fmt: skip
    try:
        mine = process_cpu.CpuGroups({"tree": [child.pid]})
        before = mine.read()["tree"]
        assert child.stdout is not None and child.stdout.readline() == b"burnt\n"
        assert mine.read()["tree"] - before >= 0.25
        excluded = process_cpu.CpuGroups({"tree": [child.pid]}, exclude=[child.pid])
        assert excluded.read()["tree"] == 0.0
        # an earlier group keeps a tree a later group's root also reaches
        nested = process_cpu.CpuGroups({"inner": [child.pid], "outer": [child.pid]})
        assert nested.read()["outer"] == 0.0
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def test_per_record_is_the_difference_over_the_records() -> None:
    got = process_cpu.per_record_us({"job": 1.0, "broker": 0.5}, {"job": 1.5, "broker": 0.5}, 1000)
    assert got == {"job": 500.0, "broker": 0.0}


def test_reaped_children_stay_in_their_parents_tree() -> None:
    """A grandchild that burnt 0.3 s and was reaped by the child still counts with
    ``reaped=True`` (the fork server reaps the job's workers); without it, its time is gone."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; subprocess.run([sys.executable, "
         "'-c', 'import time\\nend = time.process_time() + 0.3\\nwhile time.process_time() < "
         "end: pass']); print('reaped', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == b"reaped\n"
        assert process_cpu.CpuGroups({"tree": [child.pid]}, reaped=True).read()["tree"] >= 0.25
        assert process_cpu.CpuGroups({"tree": [child.pid]}).read()["tree"] < 0.25
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def test_run_queue_samples_grow_with_a_busy_childs_run_time() -> None:
    """Each sample sums run and wait over the tree so far: a child burning 0.3 s of CPU after
    its first reading shows up as the samples' difference (the latency timeline rests on it).
    The child burns only once a sample has seen it (it waits for a line on stdin)."""
    go = "import sys\nsys.stdin.readline()\n" + BURN
    child = None
    try:
        with process_cpu.RunQueueWait(os.getpid(), period=0.02) as queue:
            child = subprocess.Popen([sys.executable, "-c", go], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)  # fmt: skip
            while child.pid not in queue._last:  # the sampler's first reading of the child
                time.sleep(0.01)
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(b"go\n")
            child.stdin.flush()
            assert child.stdout.readline() == b"burnt\n"
        # the sampler's last pass, at the block's end, read the child alive (it sleeps 30 s)
    finally:
        if child is not None:
            child.kill()
            child.wait()
    times = [at for at, _, _ in queue.samples]
    assert times == sorted(times) and len(times) >= 2
    ran = [r for _, r, _ in queue.samples]
    assert ran == sorted(ran)
    assert ran[-1] - ran[0] >= 0.25
    assert (queue.ran_s, queue.waited_s) == queue.samples[-1][1:]


def test_cores_are_seconds_over_the_wall_clock() -> None:
    assert process_cpu.cores(1.5, 3.0, 2.0) == "ran 0.75 waited 1.50 cores"


def test_cores_name_the_weighted_cgroups_beside_the_run() -> None:
    assert process_cpu.cores(1.0, 1.0, 1.0, {"b", "a"}) == (
        "ran 1.00 waited 1.00 cores, beside weighted cgroup(s) a, b"
    )


def test_weighted_neighbours_are_busy_groups_above_the_default_weight(tmp_path: Path) -> None:
    """A group counts with more than 1024 shares and a task; an idle or default-weight group,
    a plain file and a group without ``cpu.shares`` do not."""
    for name, shares, tasks in (("busy", "262144", "4353\n4354\n"), ("idle", "262144", ""),
                                ("plain", "1024", "17\n"), ("other", "2048", "18\n")):  # fmt: skip
        (tmp_path / name).mkdir()
        (tmp_path / name / "cpu.shares").write_text(shares + "\n")
        (tmp_path / name / "tasks").write_text(tasks)
    (tmp_path / "broken").mkdir()
    (tmp_path / "tasks").write_text("1\n")
    assert process_cpu.weighted_neighbours(str(tmp_path)) == {"busy", "other"}
    assert process_cpu.weighted_neighbours(str(tmp_path / "missing")) == set()


def test_a_threads_life_is_run_queued_and_the_rest_slept() -> None:
    life = process_cpu.thread_life(7, (10.0, 1.0, 0.5), (12.0, 2.2, 0.8))
    assert life.parent == 7
    assert (life.seconds, life.ran_s, life.waited_s) == pytest.approx((2.0, 1.2, 0.3))
    assert life.slept_s == pytest.approx(0.5)
    assert life.share(life.slept_s) == pytest.approx(0.25)
    # readings a few microseconds apart may put run + queued above the seconds: never negative
    assert process_cpu.thread_life(7, (0.0, 0.0, 0.0), (1.0, 0.9, 0.2)).slept_s == 0.0
    assert process_cpu.thread_life(7, (1.0, 0.0, 0.0), (1.0, 0.0, 0.0)).share(0.0) == 0.0


def test_main_threads_tell_a_sleeping_grandchild_from_a_burning_one() -> None:
    """A grandchild that sleeps between the sampler's readings shows as slept, one that burns
    as run; each names the child that forked it as its parent (the record job's workers are
    told from the fork server that way)."""
    script = (
        "import subprocess, sys\n"
        "burn = 'import time\\nprint(flush=True)\\nend = time.process_time() + 3\\n"
        "while time.process_time() < end: pass\\ntime.sleep(30)'\n"
        "nap = 'import time\\nprint(flush=True)\\ntime.sleep(30)'\n"
        "procs = [subprocess.Popen([sys.executable, '-c', c], stdout=subprocess.PIPE)\n"
        "         for c in (burn, nap)]\n"
        "for p in procs: p.stdout.readline()\n"  # both past their start: burning, asleep
        "print(procs[0].pid, procs[1].pid, flush=True)\n"
        "procs[0].wait()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             start_new_session=True)  # fmt: skip
    try:
        assert child.stdout is not None
        burner, napper = map(int, child.stdout.readline().split())
        with process_cpu.RunQueueWait(os.getpid(), period=0.02) as queue:
            deadline = time.monotonic() + 0.6
            while time.monotonic() < deadline or burner not in queue._main_first:
                time.sleep(0.02)
        lives = queue.main_threads()
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert lives[burner].parent == child.pid and lives[napper].parent == child.pid
    assert lives[child.pid].parent == os.getpid()
    assert lives[napper].seconds >= 0.5
    assert lives[napper].share(lives[napper].slept_s) >= 0.9
    assert lives[burner].share(lives[burner].slept_s) <= 0.1


def test_rss_reads_the_named_status_line_and_zero_for_a_process_gone() -> None:
    resident = process_cpu.rss_bytes(os.getpid())
    anonymous = process_cpu.rss_bytes(os.getpid(), "RssAnon")
    assert 0 < anonymous < resident  # the interpreter's own code pages are resident, not anon
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process_cpu.rss_bytes(child.pid) == 0 == process_cpu.rss_bytes(child.pid, "RssAnon")
