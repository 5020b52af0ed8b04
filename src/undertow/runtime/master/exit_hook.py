"""Jobs still running when the Python interpreter exits are cancelled, and the console says so.

A script that submits a job with ``execute_async`` and ends without waiting for its result
used to die under the running job: the JobMaster's daemon thread met executors that refuse
work at interpreter exit and printed tracebacks ("cannot schedule new futures after
interpreter shutdown"), and the workers learned of the end only from their lost connections.
Flink's local executor cancels such a job when its mini cluster closes; so does this hook,
and it names the job and what to call to let it run.

Lifecycle and threading: a JobMaster is :func:`track`-ed when it starts and
:func:`untrack`-ed when its loop ends (its own thread). :func:`cancel_running_jobs` runs once,
on the main thread, from ``threading``'s exit hooks: before non-daemon threads are joined and
before ``concurrent.futures`` refuses new work (those hooks run in reverse order of
registration, and its own is registered first, below), so a cancelled job's coordinator can
still write and delete on its executor while the hook waits for the job's end.
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401  (registers its exit hook before ours)
import sys
import threading
import time
from typing import Protocol

#: How long the exit hook waits for the cancelled jobs to end.
CANCEL_WAIT_S = 30.0


class RunningJob(Protocol):
    """What the hook needs of a job: its id, a cancel, and a bounded wait for its end."""

    @property
    def job_id(self) -> str: ...

    def cancel(self) -> None: ...

    def wait_ended(self, timeout: float) -> bool:
        """Whether the job ended within ``timeout`` seconds."""
        ...


_lock = threading.Lock()
_running: dict[str, RunningJob] = {}


def track(job: RunningJob) -> None:
    """``job`` runs until :func:`untrack`; any thread."""
    with _lock:
        _running[job.job_id] = job


def untrack(job: RunningJob) -> None:
    """``job`` ended; any thread."""
    with _lock:
        _running.pop(job.job_id, None)


def running_jobs() -> list[RunningJob]:
    """The jobs tracked now (started, their loop not ended); any thread."""
    with _lock:
        return list(_running.values())


def cancel_running_jobs(wait_s: float = CANCEL_WAIT_S) -> list[str]:
    """Cancel every tracked job and wait up to ``wait_s`` seconds in all for them to end; returns
    the ids of the jobs cancelled. Called at interpreter exit (and by tests)."""
    jobs = running_jobs()
    for job in jobs:
        sys.stderr.write(
            f"[undertow] job {job.job_id[:8]} still running as the script ends: cancelling it "
            "(wait for its result, e.g. JobClient.get_job_execution_result().result(), to let "
            "it run)\n"
        )
        sys.stderr.flush()
        job.cancel()
    deadline = time.monotonic() + wait_s  # one wait for all: they end concurrently
    for job in jobs:
        if not job.wait_ended(max(0.0, deadline - time.monotonic())):
            sys.stderr.write(f"[undertow] job {job.job_id[:8]} did not end within {wait_s:g} s\n")
    return [job.job_id for job in jobs]


# The hook threading runs before joining threads (Python >= 3.9; concurrent.futures uses it).
threading._register_atexit(cancel_running_jobs)  # type: ignore[attr-defined]
