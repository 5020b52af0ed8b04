"""Jobs still running at interpreter exit are cancelled with a console line
(``undertow.runtime.master.exit_hook``): the hook itself on fakes, and a script that ends
without waiting for its job, in a process of its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

from undertow.runtime.master import exit_hook


class FakeJob:
    def __init__(self, job_id: str, ends: bool) -> None:
        self.job_id = job_id
        self.ends = ends
        self.cancelled = threading.Event()

    def cancel(self) -> None:
        self.cancelled.set()

    def wait_ended(self, timeout: float) -> bool:
        return self.ends and self.cancelled.wait(timeout)


def test_the_hook_cancels_the_jobs_still_tracked_and_says_which(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # only this test's jobs: another test's job still ending in this process is not its premise
    monkeypatch.setattr(exit_hook, "_running", {})
    running, ended, stuck = (
        FakeJob("a" * 32, True),
        FakeJob("b" * 32, True),
        FakeJob("c" * 32, False),
    )
    for job in (running, ended, stuck):
        exit_hook.track(job)
    exit_hook.untrack(ended)
    try:
        assert exit_hook.cancel_running_jobs(wait_s=0.05) == [running.job_id, stuck.job_id]
    finally:
        exit_hook.untrack(running)
        exit_hook.untrack(stuck)
    assert running.cancelled.is_set() and stuck.cancelled.is_set() and not ended.cancelled.is_set()
    err = capsys.readouterr().err
    assert "job aaaaaaaa still running as the script ends: cancelling it" in err
    assert "job bbbbbbbb" not in err
    assert "job cccccccc did not end within 0.05 s" in err


SCRIPT = textwrap.dedent(
    """
    import time
    from undertow.common import Configuration, WatermarkStrategy
    from undertow.datastream import StreamExecutionEnvironment
    from undertow.datastream.connectors.datagen import DataGeneratorSource
    from undertow.datastream.connectors.discard import DiscardingSink

    env = StreamExecutionEnvironment(Configuration({
        "rest.port": "-1", "execution.target": "local",
        "execution.checkpointing.interval": "50 ms"}))
    env.set_parallelism(2)
    env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    ).key_by(lambda n: n % 4).map(lambda n: n).sink_to(DiscardingSink())
    client = env.execute_async("ends with the script")
    deadline = time.monotonic() + 60
    while client.get_job_status().result().name != "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # a few checkpoints in flight when the script ends
    """
)


def test_a_script_that_ends_under_its_running_job_cancels_it_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "still running as the script ends: cancelling it" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
