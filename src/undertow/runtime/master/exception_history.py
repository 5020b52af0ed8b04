"""The job's failures, one per failed attempt: what the console prints and REST serves.

Flink keeps an *exception history*: for every failure that failed (or restarted) the job, the
root exception with its name, stack trace, time, and the task and location it came from
(``ExceptionHistoryEntry``). :class:`ExceptionHistory` is that list, bounded by
``web.exception-history-size``; :class:`FailureRecord` is one entry, frozen, built from the
error that ended an attempt (:func:`failure_record`). :func:`console_report` is the text the
JobMaster prints the moment an attempt fails, so a job started with ``execute_async`` never
ends ``FAILED`` without a word.

Pure: the JobMaster hands in the error, its origin and a clock value. Threading: the
JobMaster's loop only; records are immutable and may be handed to any thread.
"""

from __future__ import annotations

import traceback
from collections import deque
from dataclasses import dataclass

from undertow.core.errors import JobExecutionError, RestoreError
from undertow.core.types import AttemptNumber

#: Flink's default ``web.exception-history-size``.
DEFAULT_HISTORY_SIZE = 16


@dataclass(frozen=True, slots=True)
class TaskOrigin:
    """Where a failure came from: Flink's ``taskName`` and ``location``."""

    #: The vertex and subtask, Flink's way: ``"Map -> Sink (2/4)"`` (1-based subtask).
    task_name: str
    #: The worker that ran it: ``"worker 1 (host:port)"``.
    location: str

    @classmethod
    def of(cls, vertex_name: str, subtask: int, parallelism: int, location: str) -> TaskOrigin:
        return cls(f"{vertex_name} ({subtask + 1}/{parallelism})", location)


@dataclass(frozen=True, slots=True)
class FailureRecord:
    """One failed attempt's root cause (Flink's ``RootExceptionHistoryEntry``)."""

    #: The deployment attempt that failed (0 = the first).
    attempt: AttemptNumber
    #: The exception's class name as raised where it happened (``ValueError``); for a
    #: failure outside any task the class of the error the JobMaster raised.
    exception_name: str
    #: One line: what failed, where.
    message: str
    #: The full text: message and traceback (remote, from the worker, when there is one).
    stacktrace: str
    #: When the JobMaster learnt of it (epoch ms).
    timestamp: int
    origin: TaskOrigin | None = None


def failure_record(
    error: BaseException, attempt: AttemptNumber, timestamp: int, origin: TaskOrigin | None = None
) -> FailureRecord:
    """The record of ``error``, which ended ``attempt`` at ``timestamp``."""
    message = str(error.args[0]) if error.args else type(error).__name__
    name = type(error).__name__
    remote = None
    if isinstance(error, JobExecutionError):
        remote = error.remote_traceback
        name = error.exception_name or name
    elif isinstance(error, RestoreError):  # its str() names the snapshot; a worker's: traceback
        message, remote = str(error), error.remote_traceback
    if remote:
        stacktrace = f"{message}\n\n{remote.rstrip()}"
    elif error.__traceback__ is not None:
        stacktrace = "".join(traceback.format_exception(error)).rstrip()
    else:
        stacktrace = f"{type(error).__name__}: {message}"
    return FailureRecord(attempt, name, message, stacktrace, timestamp, origin)


def console_report(job_id: str, record: FailureRecord) -> str:
    """What the JobMaster prints when an attempt fails: where, what, and the traceback."""
    where = f" on {record.origin.location}" if record.origin else ""
    what = record.message.removeprefix("job failed: ")
    trace = record.stacktrace.removeprefix(record.message).lstrip("\n")
    return f"job {job_id[:8]} attempt {record.attempt} failed{where}: {what}\n{_indent(trace)}"


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.splitlines())


class ExceptionHistory:
    """The newest ``size`` failures, newest first; ``truncated`` once one was dropped."""

    def __init__(self, size: int = DEFAULT_HISTORY_SIZE) -> None:
        self._entries: deque[FailureRecord] = deque(maxlen=max(1, size))
        self._recorded = 0

    def record(self, failure: FailureRecord) -> None:
        self._entries.appendleft(failure)
        self._recorded += 1

    def entries(self) -> tuple[FailureRecord, ...]:
        return tuple(self._entries)

    @property
    def truncated(self) -> bool:
        return self._recorded > len(self._entries)
