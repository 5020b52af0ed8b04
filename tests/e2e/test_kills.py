"""The kill tests' first-attempt hold (tests/e2e/kills.py), without a job: attempt 0 is paced
until armed, then blocked until released; later attempts pass at once. And when the wait for
the checkpoints before a kill gives up (``CheckpointWait``): not during the workers' launch."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

from undertow.datastream import JobStatus

from .kills import CheckpointWait, FirstAttemptHold


def _opened(hold: FirstAttemptHold, attempt: int) -> FirstAttemptHold:
    hold.open(SimpleNamespace(get_attempt_number=lambda: attempt))
    return hold


def test_the_first_attempt_is_held_from_arming_to_release(tmp_path: Path) -> None:
    hold = _opened(FirstAttemptHold(tmp_path / "hold", pace_s=0.01), attempt=0)
    started = time.monotonic()
    assert hold.map("a") == "a"
    assert time.monotonic() - started >= 0.01  # paced while not armed
    hold.arm()
    passed = threading.Event()
    held = threading.Thread(target=lambda: (hold.map("b"), passed.set()), daemon=True)
    held.start()
    assert not passed.wait(0.3), "an armed first attempt went on before the release"
    hold.release()
    assert passed.wait(5)
    held.join(5)
    assert hold.map("c") == "c"  # released: no pace any more


def test_later_attempts_are_never_held(tmp_path: Path) -> None:
    hold = FirstAttemptHold(tmp_path / "hold", pace_s=10.0)
    hold.arm()  # armed and not released: attempt 0 would block
    later = _opened(hold, attempt=1)
    started = time.monotonic()
    batch = SimpleNamespace(num_rows=1000)
    assert later.map("x") == "x" and later.map_batches(batch) is batch
    assert time.monotonic() - started < 1.0


def test_the_checkpoint_wait_does_not_count_the_launch_of_the_workers() -> None:
    wait = CheckpointWait(within_s=30.0, timeout_s=120.0, now=0.0)
    assert wait.gave_up(40.0, JobStatus.INITIALIZING, completed=0) is None  # a slow launch
    assert wait.gave_up(41.0, JobStatus.RUNNING, completed=0) is None
    assert wait.gave_up(70.0, JobStatus.RUNNING, completed=1) is None
    assert wait.gave_up(99.0, JobStatus.RUNNING, completed=1) is None
    assert wait.gave_up(100.5, JobStatus.RUNNING, completed=1) == (
        "none completed within 30 s after checkpoint 1"
    )


def test_the_checkpoint_wait_gives_up_on_a_running_job_without_checkpoints() -> None:
    wait = CheckpointWait(within_s=30.0, timeout_s=120.0, now=0.0)
    assert wait.gave_up(5.0, JobStatus.RUNNING, completed=0) is None
    assert wait.gave_up(35.5, JobStatus.RUNNING, completed=0) == (
        "none completed within 30 s after the job ran"
    )


def test_the_checkpoint_wait_ends_with_the_job_or_its_timeout() -> None:
    assert (
        CheckpointWait(30.0, 120.0, now=0.0).gave_up(1.0, JobStatus.FINISHED, completed=0)
        == "the job ended"
    )
    assert (
        CheckpointWait(30.0, 120.0, now=0.0).gave_up(120.5, JobStatus.INITIALIZING, completed=0)
        == "still waiting after 120 s"
    )
