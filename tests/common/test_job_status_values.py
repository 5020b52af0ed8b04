"""``undertow.common.job_status``: PyFlink's ``JobStatus`` at PyFlink's path, with its members,
and the two terminal predicates the JobMaster and clients rely on."""

from __future__ import annotations

from undertow.common import JobStatus
from undertow.common.job_status import JobStatus as AtItsModule
from undertow.datastream import JobStatus as FromDatastream

#: The members of PyFlink 2.3's ``pyflink.common.job_status.JobStatus``.
PYFLINK_MEMBERS = {"CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING", "CANCELED",
                   "FINISHED", "RESTARTING", "SUSPENDED", "RECONCILING"}  # fmt: skip


def test_it_is_one_class_at_pyflinks_paths_with_pyflinks_members() -> None:
    assert JobStatus is AtItsModule is FromDatastream
    assert {s.name for s in JobStatus} >= PYFLINK_MEMBERS


def test_only_failed_canceled_and_finished_are_globally_terminal() -> None:
    terminal = {s for s in JobStatus if s.is_globally_terminal_state()}
    assert terminal == {JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED}
    ended_here = {s for s in JobStatus if s.is_terminal_state()}
    assert ended_here == terminal | {JobStatus.SUSPENDED}
