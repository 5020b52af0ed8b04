"""A pytest plugin (``tests/conftest.py`` loads it): a job a test starts has ended once the
test is over. A job left running (an ``execute_async`` whose result nobody waited for, a
``cancel()`` not waited on) goes on using the CPU in the next tests, and its console lines
(``[undertow] checkpoint 6 completed ...``) land in no test's output but pytest's own.

The jobs a test's call started (``exit_hook.running_jobs``: tracked from start to the end of
the JobMaster's loop) and still running after its teardown are waited on up to
:data:`END_WAIT_S`; one still running then is cancelled and the test fails naming it. Jobs
started by fixtures (a module's job shared by its tests) are the fixtures' to end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from undertow.runtime.master.exit_hook import RunningJob, running_jobs

#: How long a job started by a test may take to end after the test: a cancelled job ends
#: within 2 s here (its last checkpoint's files, its workers).
END_WAIT_S = 20.0

_STARTED = pytest.StashKey[list[RunningJob]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    before = {job.job_id for job in running_jobs()}
    try:
        return (yield)
    finally:
        item.stash[_STARTED] = [job for job in running_jobs() if job.job_id not in before]


@pytest.hookimpl(wrapper=True, trylast=True)  # innermost: inside the capture of teardown
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    result = yield
    left = [job for job in item.stash.get(_STARTED, []) if not job.wait_ended(END_WAIT_S)]
    for job in left:
        job.cancel()
    for job in left:
        job.wait_ended(END_WAIT_S)
    if left:
        pytest.fail(
            f"{item.nodeid} left job(s) {[job.job_id[:8] for job in left]} running "
            f"{END_WAIT_S:g} s after it ended (cancelled now): wait for the job's end "
            "(JobClient.get_job_execution_result().result(), after a cancel() too)",
            pytrace=False,
        )
    return result
