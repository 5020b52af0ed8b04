"""The default restart strategy with checkpointing on (``exponential-delay``), through the
public API: a job that fails at once twice waits the initial backoff, then the multiplied one;
after running healthily past ``reset-backoff-threshold`` and failing again, it waits the initial
backoff again, and then finishes.

The gaps are measured in the failing map (``local-threads``: the attempts' operators are
threads of this process) from a failure to the next attempt's ``open``; they are at least the
announced delay, and the gap after the reset stays far below the delay a missing reset would
have given. No ``restart-strategy.type`` is set.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream import MapFunction, RuntimeContext
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink

from .conftest import EnvFactory

INITIAL_MS, MULTIPLIER, RESET_MS = 150, 4, 600
HEALTHY_S = 0.9  # attempt 2 runs this long (> RESET_MS) before it fails
#: attempt -> (monotonic time of ``open``, of the failure)
OPENED: dict[int, float] = {}
FAILED: dict[int, float] = {}


class FailsTwiceThenAfterRunning(MapFunction):
    """Attempts 0 and 1 fail on their first record; attempt 2 fails after ``HEALTHY_S`` of
    running; attempt 3 runs to the end."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.attempt = runtime_context.get_attempt_number()
        OPENED.setdefault(self.attempt, time.monotonic())

    def map(self, value: Any) -> Any:
        now = time.monotonic()
        if self.attempt < 2 or (self.attempt == 2 and now - OPENED[2] > HEALTHY_S):
            FAILED.setdefault(self.attempt, now)
            raise RuntimeError(f"planned failure of attempt {self.attempt}")
        return value


@pytest.mark.parametrize("target", ["local-threads"])
def test_exponential_delay_grows_and_resets_after_healthy_running(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    OPENED.clear()
    FAILED.clear()
    prefix = "restart-strategy.exponential-delay."
    env = make_env(parallelism=1, config={
        # on (so the default strategy applies) but never taken: at 10 s a loaded machine
        # (two pytest workers on 2 cores) saw checkpoint 1 complete before attempt 2 failed,
        # and the job restored it; no final checkpoint either, so its end does not wait
        "execution.checkpointing.interval": "1 h",
        "execution.checkpointing.checkpoints-after-tasks-finish": "false",
        "execution.checkpointing.dir": str(tmp_path),
        prefix + "initial-backoff": f"{INITIAL_MS} ms",
        prefix + "backoff-multiplier": str(MULTIPLIER),
        prefix + "max-backoff": "10 s",
        prefix + "jitter-factor": "0",
        prefix + "reset-backoff-threshold": f"{RESET_MS} ms",
    })  # fmt: skip
    source = DataGeneratorSource(lambda i: i, count=60, records_per_second=50)
    env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers") \
        .map(FailsTwiceThenAfterRunning()).sink_to(DiscardingSink())  # fmt: skip
    env.execute("exponential delay")

    announced = [int(ms) for ms in re.findall(r"restarting in (\d+) ms", capsys.readouterr().err)]
    grown = INITIAL_MS * MULTIPLIER
    assert announced == [INITIAL_MS, grown, INITIAL_MS], announced
    assert sorted(OPENED) == [0, 1, 2, 3] and sorted(FAILED) == [0, 1, 2], (OPENED, FAILED)
    gaps_ms = [(OPENED[a + 1] - FAILED[a]) * 1000 for a in range(3)]
    assert all(gap >= delay for gap, delay in zip(gaps_ms, announced, strict=True)), gaps_ms
    # without the reset, the third delay would have been grown * MULTIPLIER (2.4 s)
    assert gaps_ms[2] < grown * MULTIPLIER, gaps_ms
