"""Kill -9 a worker once a checkpoint completed, then wait for the job: shared by the e2e kill
tests. Reads the JobMaster's console lines from pytest's ``capsys``.

The kill chooses among the job's own live workers (``GET /taskmanagers``, through
:func:`~undertow.testing.oracle.live_workers_of`), never another process named as a worker.
A job whose first attempt could end before the kill holds it: its sources with a
:class:`~undertow.testing.gates.SourceHold` (``source_hold=``, released once the kill landed),
or a stage after them with :class:`FirstAttemptHold` (``hold=``)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from undertow.datastream import JobStatus
from undertow.testing.gates import SourceHold
from undertow.testing.oracle import WorkerKiller, live_workers_of

COMPLETED = re.compile(r"^\[undertow\] checkpoint (\d+) completed", re.M)
#: A completed unaligned checkpoint's in-flight data (``(unaligned, in-flight 50.9 KiB, ...)``).
IN_FLIGHT = re.compile(
    r"^\[undertow\] checkpoint \d+ completed .*\(unaligned, in-flight (?P<size>[\d.]+) ", re.M
)
RESTARTING = re.compile(r"^\[undertow\] job \w+ failed \((?P<reason>.*)\); restarting", re.M)
#: How long past its latest moment the kill may take (asking the REST API for the candidates).
KILL_SLACK_S = 15.0
#: The longest a held first attempt waits for its release (then it goes on, unheld).
HOLD_MAX_S = 60.0


class FirstAttemptHold:
    """An identity function (``map`` for records, ``map_batches`` for record batches) that
    keeps a job's first attempt (attempt 0) from ending before the kill: there it waits
    ``pace_s`` a row until :meth:`arm`, then each call blocks until :meth:`release` (at most
    :data:`HOLD_MAX_S`). Later attempts pass at full speed.

    :func:`run_killing_a_worker_after_a_checkpoint` arms it once the checkpoints it waits for
    completed, right before the kill, and releases it once the kill landed; a held subtask
    blocks its mailbox, so no checkpoint completes while armed, and the attempt can neither
    finish nor take further checkpoints before the kill. Until armed the pace only keeps rows
    flowing while checkpoints complete; it costs the test nothing after the kill.

    Threading and lifecycle: pickled to the workers (``local`` and ``spark`` run them on this
    machine); the test and the workers share its state as two marker files in ``directory``
    (created by :meth:`arm` and :meth:`release`)."""

    def __init__(self, directory: Path, pace_s: float = 0.0) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.armed_marker = str(directory / "armed")
        self.released_marker = str(directory / "released")
        self.pace_s = pace_s
        self.attempt = 0

    def arm(self) -> None:
        Path(self.armed_marker).touch()

    def release(self) -> None:
        Path(self.released_marker).touch()

    def open(self, runtime_context: Any) -> None:
        self.attempt = runtime_context.get_attempt_number()

    def _pass(self, rows: int) -> None:
        if self.attempt != 0 or os.path.exists(self.released_marker):
            return
        if not os.path.exists(self.armed_marker):
            time.sleep(self.pace_s * rows)
            return
        deadline = time.monotonic() + HOLD_MAX_S
        while not os.path.exists(self.released_marker) and time.monotonic() < deadline:
            time.sleep(0.005)

    def map(self, value: Any) -> Any:
        self._pass(1)
        return value

    def map_batches(self, batch: Any) -> Any:
        self._pass(batch.num_rows)
        return batch


class CheckpointWait:
    """When :func:`run_killing_a_worker_after_a_checkpoint` stops waiting for its checkpoints:
    once the job ended, once ``within_s`` passed without progress (the job starting to run,
    then each newly completed checkpoint), or ``timeout_s`` after the wait began.

    The time the target takes to launch the workers (INITIALIZING, until every worker
    registered and got its tasks) does not count against ``within_s``: on a loaded machine
    (load 10-13 on 2 cores) Spark took 10.7 s to start a barrier stage's two Python workers,
    the first checkpoint came 2.6 s after RUNNING and the next ones every 0.7-1.5 s; a fixed
    30 s from the submission failed 2 of 5 such runs with only checkpoint 1 completed, the
    launch having taken most of it. Checkpoints that stop completing while the job runs
    still fail within ``within_s``.

    Pure: the caller passes the clock and what it saw; one caller thread."""

    def __init__(self, within_s: float, timeout_s: float, now: float) -> None:
        self.within_s = within_s
        self.timeout_s = timeout_s
        self.began = now
        #: when the job was last seen progressing (None until it runs)
        self.progress_at: float | None = None
        self.completed = 0

    def gave_up(self, now: float, status: JobStatus, completed: int) -> str | None:
        """Why the wait ends without its checkpoints, or None while it goes on."""
        if status.is_globally_terminal_state():
            return "the job ended"
        started = self.progress_at is None and status is JobStatus.RUNNING
        if started or completed > self.completed:
            self.progress_at, self.completed = now, completed
        if self.progress_at is not None and now - self.progress_at > self.within_s:
            since = f"checkpoint {self.completed}" if self.completed else "the job ran"
            return f"none completed within {self.within_s:g} s after {since}"
        if now - self.began > self.timeout_s:
            return f"still waiting after {self.timeout_s:g} s"
        return None


def run_killing_a_worker_after_a_checkpoint(
    client: Any,
    capsys: pytest.CaptureFixture[str],
    seed: int,
    *,
    earliest_s: float,
    latest_s: float,
    timeout_s: float,
    checkpoint_within_s: float = 30.0,
    checkpoints: int = 1,
    flowed: Callable[[], bool] | None = None,
    in_flight: bool = False,
    hold: FirstAttemptHold | None = None,
    source_hold: SourceHold | None = None,
) -> tuple[Any, str]:
    """Wait until a checkpoint completed (so there is one to restore), start a seeded
    :class:`WorkerKiller` among the job's live workers, wait for the kill, then for the job's
    result; return it and the console. Fails naming the seed if ``checkpoints`` checkpoints
    did not complete (:class:`CheckpointWait`: one every ``checkpoint_within_s`` once the job
    runs, all within ``timeout_s``; or the job ended before), the job failed,
    or no worker was killed; each failure shows the console and what the killer printed
    (the candidates it chose from). (Wait for several when the restore must carry state: a
    first checkpoint may come before any record got through a slow-starting pipeline, or pass
    ``flowed``: true once a checkpoint holds records, such as a sink's first committed
    output, or ``in_flight``: true once a completed unaligned checkpoint carried in-flight
    data, records a source emitted before it, so that one and every later checkpoint hold
    the sources' progress; two checkpoints alone may complete before a consumer's first
    fetch.) With ``hold``, the job's first attempt is held from the kill's start to its end
    (:class:`FirstAttemptHold`); ``source_hold`` (holding the sources since before the call)
    is released once the kill landed."""
    console, oracle = "", ""

    def read() -> None:
        nonlocal console, oracle
        captured = capsys.readouterr()
        console += captured.err
        oracle += "".join(f"{line}\n" for line in captured.out.splitlines()
                          if line.startswith("[oracle]"))  # fmt: skip

    def waiting() -> bool:
        if len(COMPLETED.findall(console)) < checkpoints:
            return True
        if in_flight and not any(float(m["size"]) > 0 for m in IN_FLIGHT.finditer(console)):
            return True
        return flowed is not None and not flowed()

    wait = CheckpointWait(checkpoint_within_s, timeout_s, time.monotonic())
    while waiting():
        status = client.get_job_status().result()
        gave_up = wait.gave_up(time.monotonic(), status, len(COMPLETED.findall(console)))
        if gave_up is not None:
            client.cancel()
            read()
            raise AssertionError(
                f"seed {seed}: {checkpoints} checkpoints (with records) did not complete: "
                f"{gave_up} (job {status.value}); nothing to restore, no kill:\n{console}"
                f"{oracle}"
            )
        time.sleep(0.01)
        read()
    killer = WorkerKiller(seed, earliest_s=earliest_s, latest_s=latest_s,
                          candidates=live_workers_of(client))  # fmt: skip
    if hold is not None:
        hold.arm()
    killer.start()
    try:
        killed = killer.join(latest_s + KILL_SLACK_S)
        if hold is not None:
            hold.release()
        if source_hold is not None:
            source_hold.release()
        result = client.get_job_execution_result(timeout=timeout_s)
    except Exception as err:
        read()
        report = "\n".join(killer.report)
        raise AssertionError(f"seed {seed}: the job failed: {err}\n{console}{report}") from err
    finally:
        killer.cancel()
        if hold is not None:
            hold.release()
        if source_hold is not None:
            source_hold.release()
        client.cancel()
    read()
    report = "\n".join(killer.report)
    assert killed is not None, f"seed {seed}: no worker process was killed\n{console}{report}"
    return result, console
