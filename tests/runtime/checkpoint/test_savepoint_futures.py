"""Requested savepoints' futures: refused at once with the reason, failed naming the job,
the checkpoint and the directory, completed with the directory; a stop's barrier options."""

from __future__ import annotations

import asyncio

import pytest

from undertow.common import Configuration
from undertow.runtime.checkpoint.barrier import SnapshotType
from undertow.runtime.checkpoint.coordinator_states import WaitingSavepoint
from undertow.runtime.checkpoint.failure import CheckpointException, CheckpointFailureReason
from undertow.runtime.checkpoint.savepoint import SavepointRequest
from undertow.runtime.checkpoint.savepoint_futures import SavepointFutures
from undertow.runtime.checkpoint.settings import CheckpointSettings


def futures() -> SavepointFutures:
    return SavepointFutures("job-7", CheckpointSettings.of(Configuration({})))


def test_a_savepoint_is_refused_during_a_stop_and_without_an_attempt() -> None:
    async def main() -> None:
        spf, request = futures(), SavepointRequest("/sp")
        future, accepted = spf.request(request, stopping=True, attempt_running=True)
        assert not accepted and future.done()
        with pytest.raises(CheckpointException, match="job job-7 is already stopping"):
            await future
        future, accepted = spf.request(request, stopping=False, attempt_running=False)
        assert not accepted and future.done()
        with pytest.raises(CheckpointException, match="job job-7: no attempt is running"):
            await future
        future, accepted = spf.request(request, stopping=False, attempt_running=True)
        assert accepted and not future.done()

    asyncio.run(main())


def test_outcomes_name_the_job_the_checkpoint_and_the_directory() -> None:
    async def main() -> None:
        spf, loop = futures(), asyncio.get_running_loop()
        request = SavepointRequest("/sp", stop=True)
        failing, done = loop.create_future(), loop.create_future()
        spf.triggered(3, failing)
        spf.triggered(4, done)
        error = spf.failed(3, request, CheckpointFailureReason.CHECKPOINT_EXPIRED, "late")
        assert failing.exception() is error
        assert "3 of job job-7 into /sp failed: " in str(error) and str(error).endswith("late")
        spf.completed(4, "/sp/savepoint-job7-4")
        assert done.result() == "/sp/savepoint-job7-4"
        waiting = WaitingSavepoint(request, loop.create_future())
        spf.did_not_start(waiting, CheckpointFailureReason.JOB_FAILOVER_REGION)
        with pytest.raises(CheckpointException, match="of job job-7 into /sp did not start"):
            await waiting.future

    asyncio.run(main())


def test_a_stops_barrier_is_synchronous_and_unaligned_when_asked() -> None:
    spf = futures()
    stop = spf.barrier_options(SavepointRequest("/sp", stop=True, unaligned=True))
    assert stop.snapshot_type is SnapshotType.SYNC_SAVEPOINT and stop.is_unaligned
    plain = spf.barrier_options(SavepointRequest("/sp"))
    assert plain.snapshot_type is SnapshotType.SAVEPOINT and not plain.is_unaligned
