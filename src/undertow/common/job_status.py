"""PyFlink's ``JobStatus`` (``pyflink.common.job_status``): where a job is in its lifecycle.

``JobClient.get_job_status().result()`` and the REST API answer with it. The transitions between the
values are the JobMaster's (``undertow.runtime.master.job_status``); this module holds only the
values and PyFlink's two predicates, so ``from undertow.common import JobStatus`` ports.
"""

from __future__ import annotations

import enum


class JobStatus(enum.Enum):
    INITIALIZING = "INITIALIZING"
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"

    def is_globally_terminal_state(self) -> bool:
        """Ended for good: FAILED, CANCELED or FINISHED (a job is never restarted from them)."""
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)

    def is_terminal_state(self) -> bool:
        """Ended in this process: globally terminal, or SUSPENDED."""
        return self.is_globally_terminal_state() or self is JobStatus.SUSPENDED
