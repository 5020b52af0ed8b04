"""The job lifecycle as pure transitions: the paths the JobMaster takes, and what it refuses."""

from __future__ import annotations

import pytest

from undertow.runtime.master.job_status import (
    IllegalJobTransition,
    JobEvent,
    JobLifecycle,
    JobStatus,
    next_status,
)

E = JobEvent


def run(*events: JobEvent) -> JobLifecycle:
    lifecycle = JobLifecycle(now_ms=1)
    for now, event in enumerate(events, start=2):
        lifecycle.fire(event, now)
    return lifecycle


@pytest.mark.parametrize(
    ("events", "final"),
    [
        ((E.DEPLOYED, E.ENDED_FINISHED), JobStatus.FINISHED),
        ((E.DEPLOYED, E.ATTEMPT_FAILED, E.ENDED_FAILED), JobStatus.FAILED),
        ((E.DEPLOYED, E.ATTEMPT_FAILED, E.RESTART, E.DEPLOYED, E.ENDED_FINISHED),
         JobStatus.FINISHED),
        ((E.DEPLOYED, E.CANCEL, E.ENDED_CANCELED), JobStatus.CANCELED),
        ((E.ATTEMPT_FAILED, E.ENDED_FAILED), JobStatus.FAILED),  # failed while registering
        ((E.ENDED_FAILED,), JobStatus.FAILED),  # could not start (a taken rest.port)
        ((E.DEPLOYED, E.RESTART), JobStatus.RESTARTING),  # a lost control connection
    ],
)  # fmt: skip
def test_the_jobmasters_paths(events: tuple[JobEvent, ...], final: JobStatus) -> None:
    assert run(*events).status is final


def test_cancelling_wins_over_a_deployment_or_failure_racing_with_it() -> None:
    lifecycle = run(E.CANCEL, E.DEPLOYED, E.ATTEMPT_FAILED)
    assert lifecycle.status is JobStatus.CANCELLING
    assert lifecycle.timestamps()["RUNNING"] == 0


def test_a_terminal_status_stays_but_for_a_crash() -> None:
    finished = run(E.DEPLOYED, E.ENDED_FINISHED)
    assert finished.fire(E.CANCEL, 99) is JobStatus.FINISHED
    assert finished.end_ms == 3
    assert finished.fire(E.CRASHED, 100) is JobStatus.FAILED
    for event in (E.DEPLOYED, E.ATTEMPT_FAILED, E.RESTART, E.ENDED_FINISHED):
        with pytest.raises(IllegalJobTransition, match="FAILED has no transition"):
            next_status(JobStatus.FAILED, event)


def test_timestamps_say_when_each_status_was_last_entered() -> None:
    lifecycle = run(E.DEPLOYED, E.ATTEMPT_FAILED, E.RESTART, E.DEPLOYED)
    times = lifecycle.timestamps()
    assert (times["INITIALIZING"], times["FAILING"], times["RESTARTING"]) == (1, 3, 4)
    assert times["RUNNING"] == 5 and times["FINISHED"] == 0 and lifecycle.end_ms == -1
    assert set(times) == {s.value for s in JobStatus}
