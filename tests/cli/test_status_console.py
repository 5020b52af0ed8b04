"""``undertow run``'s status of its jobs: the line, plain lines off a terminal, rich on one."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from tests.rest_client import wait_for
from tests.web.conftest import start_job

from undertow.cli import console
from undertow.cli.console import JobStatusSample, StatusConsole, sample, status_line
from undertow.core.errors import JobCancelledError


def test_status_line() -> None:
    job = JobStatusSample("0123456789abcdef", "my job", "RUNNING", 12345.4, 0.034, 2, 17, 45,
                          12 * 1024)  # fmt: skip
    assert status_line(job) == (
        'job 01234567 "my job" RUNNING | 12,345 records/s | backpressure 3% | '
        "checkpoint 17 (45 ms, 12.0 KiB) | restarts 2"
    )
    fresh = JobStatusSample("0123456789abcdef", "j", "CREATED", 0.0, 0.0, 0, -1, -1, -1)
    assert "no checkpoint yet" in status_line(fresh)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [False, True])
def test_status_of_a_running_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: bool
) -> None:
    monkeypatch.setattr(console, "PLAIN_EVERY_S", 0.2)
    monkeypatch.setattr(console, "TICK_S", 0.1)
    monkeypatch.setenv("COLUMNS", "240")  # rich wraps at the terminal width
    client = start_job(str(tmp_path), "status job")
    url = client.get_rest_address()
    assert url is not None
    out = _Terminal() if terminal else io.StringIO()
    status = StatusConsole(out)
    assert status.live is terminal
    status.start()
    line = re.compile(
        rf'job {client.get_job_id()[:8]} "status job" RUNNING \| [\d,]+ records/s \| '
        r"backpressure \d+% \| checkpoint (\d+) \(\d+ ms, [\d.]+ \w+\) \| restarts 0"
    )
    try:
        found = wait_for(lambda: line.findall(out.getvalue()), "a status line with a checkpoint")
        sources = [j for j in sample(url) if j.job_id == client.get_job_id()]
        assert sources and sources[0].records_per_second > 0
        assert int(found[-1]) >= 1
        if not terminal:
            assert out.getvalue().startswith("[undertow] job ")
        else:
            assert "\x1b[" in out.getvalue()  # drawn by rich, with control codes
    finally:
        status.stop()
        client.cancel()
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(30)
