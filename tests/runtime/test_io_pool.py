"""The worker's I/O pool lowers the switch interval exactly while its jobs are in flight."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from undertow.runtime.worker.io_pool import IO_SWITCH_INTERVAL_S, IOPool, SwitchIntervalHold

WORKER_INTERVAL_S = 0.001


@pytest.fixture(autouse=True)
def worker_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(WORKER_INTERVAL_S)
    yield
    sys.setswitchinterval(before)


def test_a_job_runs_with_the_short_interval_and_the_worker_interval_comes_back() -> None:
    hold = SwitchIntervalHold()
    pool = IOPool(2, hold=hold)
    try:
        seen = pool.submit(sys.getswitchinterval).result()
        assert seen == pytest.approx(IO_SWITCH_INTERVAL_S)
        pool.shutdown(wait=True)
        assert hold.holders == 0
        assert sys.getswitchinterval() == pytest.approx(WORKER_INTERVAL_S)
    finally:
        pool.shutdown()


def test_the_interval_stays_short_until_the_last_of_overlapping_jobs_is_done() -> None:
    hold = SwitchIntervalHold()
    pool = IOPool(2, hold=hold)
    release_first, release_second = threading.Event(), threading.Event()
    try:
        first = pool.submit(release_first.wait, 10)
        second = pool.submit(release_second.wait, 10)
        assert hold.holders == 2
        release_first.set()
        first.result()
        assert sys.getswitchinterval() == pytest.approx(IO_SWITCH_INTERVAL_S)
        release_second.set()
        second.result()
        pool.shutdown(wait=True)
        assert hold.holders == 0
        assert sys.getswitchinterval() == pytest.approx(WORKER_INTERVAL_S)
    finally:
        release_first.set()
        release_second.set()
        pool.shutdown()


def test_jobs_cancelled_at_shutdown_release_their_hold() -> None:
    hold = SwitchIntervalHold()
    pool = IOPool(1, hold=hold)
    gate = threading.Event()
    running = pool.submit(gate.wait, 10)
    queued = [pool.submit(sys.getswitchinterval) for _ in range(3)]
    pool.shutdown(wait=False, cancel_futures=True)
    gate.set()
    running.result()
    pool.shutdown(wait=True)
    assert all(f.cancelled() for f in queued)
    assert hold.holders == 0
    assert sys.getswitchinterval() == pytest.approx(WORKER_INTERVAL_S)


def test_an_interval_someone_else_set_meanwhile_is_kept() -> None:
    hold = SwitchIntervalHold()
    hold.acquire()
    sys.setswitchinterval(0.0005)
    hold.release()
    assert sys.getswitchinterval() == pytest.approx(0.0005)


def test_an_interval_already_shorter_is_left_alone() -> None:
    sys.setswitchinterval(0.00005)
    hold = SwitchIntervalHold()
    hold.acquire()
    assert sys.getswitchinterval() == pytest.approx(0.00005)
    hold.release()
    assert sys.getswitchinterval() == pytest.approx(0.00005)


def test_releasing_more_often_than_acquiring_is_refused() -> None:
    with pytest.raises(RuntimeError, match="released more often"):
        SwitchIntervalHold().release()
