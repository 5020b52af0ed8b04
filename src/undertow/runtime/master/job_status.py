"""The job's lifecycle: the transitions between PyFlink's :class:`JobStatus` values
(``undertow.common.job_status``), as pure data.

::

    INITIALIZING -> RUNNING -> FINISHED
                        \\-> FAILING -> RESTARTING -> RUNNING  (the restart strategy allows)
                        \\-> FAILING -> FAILED                 (it does not)
                        \\-> CANCELLING -> CANCELED            (JobClient.cancel)

Threading: the JobMaster's loop writes (and its thread at the very end); ``status`` is read
from any thread (one attribute read).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from undertow.common.job_status import JobStatus

__all__ = ["IllegalJobTransition", "JobEvent", "JobLifecycle", "JobStatus", "next_status"]


class JobEvent(enum.Enum):
    """What happens to a job, as the JobMaster sees it."""

    #: The attempt's tasks were deployed.
    DEPLOYED = "deployed"
    #: A task, worker or the control plane failed the running attempt.
    ATTEMPT_FAILED = "attempt failed"
    #: The restart strategy allows another attempt (after a failure).
    RESTART = "restart"
    #: ``JobClient.cancel`` (or REST) asked the job to stop.
    CANCEL = "cancel"
    #: The last attempt ended with a result.
    ENDED_FINISHED = "ended finished"
    #: The job gave up (no restart left, or it could not start).
    ENDED_FAILED = "ended failed"
    #: The job ended after a cancel.
    ENDED_CANCELED = "ended canceled"
    #: The JobMaster's loop died: the job is FAILED whatever it was.
    CRASHED = "crashed"


class IllegalJobTransition(RuntimeError):
    """A status and event the lifecycle does not allow: a bug in the JobMaster."""


_S = JobStatus
_ACTIVE = (_S.INITIALIZING, _S.RUNNING, _S.FAILING, _S.RESTARTING, _S.CANCELLING)
_TERMINAL = (_S.FINISHED, _S.FAILED, _S.CANCELED)

_TABLE: dict[tuple[JobStatus, JobEvent], JobStatus] = {
    (_S.INITIALIZING, JobEvent.DEPLOYED): _S.RUNNING,
    (_S.RESTARTING, JobEvent.DEPLOYED): _S.RUNNING,
    (_S.CANCELLING, JobEvent.DEPLOYED): _S.CANCELLING,
    **{(s, JobEvent.ATTEMPT_FAILED): _S.FAILING
       for s in (_S.INITIALIZING, _S.RUNNING, _S.RESTARTING)},
    (_S.CANCELLING, JobEvent.ATTEMPT_FAILED): _S.CANCELLING,
    # an attempt may also end with an error without FAILING (a lost control connection)
    **{(s, JobEvent.RESTART): _S.RESTARTING
       for s in (_S.INITIALIZING, _S.RUNNING, _S.FAILING, _S.RESTARTING)},
    **{(s, JobEvent.CANCEL): _S.CANCELLING for s in _ACTIVE},
    **{(s, JobEvent.CANCEL): s for s in _TERMINAL},
    **{(s, JobEvent.ENDED_FINISHED): _S.FINISHED for s in _ACTIVE},
    **{(s, JobEvent.ENDED_FAILED): _S.FAILED for s in _ACTIVE},
    **{(s, JobEvent.ENDED_CANCELED): _S.CANCELED for s in _ACTIVE},
    **{(s, JobEvent.CRASHED): _S.FAILED for s in (*_ACTIVE, *_TERMINAL)},
}  # fmt: skip


def next_status(status: JobStatus, event: JobEvent) -> JobStatus:
    """The status ``event`` leads to from ``status``; raises :class:`IllegalJobTransition`."""
    try:
        return _TABLE[(status, event)]
    except KeyError:
        raise IllegalJobTransition(
            f"job status {status.value} has no transition for '{event.value}'"
        ) from None


class JobLifecycle:
    """The current status and when each status was last entered (epoch ms)."""

    def __init__(self, now_ms: int) -> None:
        self._status = JobStatus.INITIALIZING
        self._times: dict[JobStatus, int] = {JobStatus.INITIALIZING: now_ms}
        #: When the job reached a globally terminal status (epoch ms); -1 before.
        self.end_ms = -1

    @property
    def status(self) -> JobStatus:
        return self._status

    def fire(self, event: JobEvent, now_ms: int) -> JobStatus:
        """Apply ``event`` at ``now_ms``; the new status."""
        status = next_status(self._status, event)
        if status is self._status:
            return status
        self._times[status] = now_ms
        self._status = status
        if status.is_globally_terminal_state():
            self.end_ms = now_ms
        return status

    def timestamps(self) -> Mapping[str, int]:
        """Status value -> when the job last entered it (0: never), Flink's ``timestamps``."""
        return MappingProxyType({s.value: self._times.get(s, 0) for s in JobStatus})
