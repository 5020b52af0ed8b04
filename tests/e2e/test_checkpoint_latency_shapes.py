"""Checkpoints complete whatever the job's shape (issue 14): a slow map chained to its source,
and a spinning UDF under backpressure with unaligned checkpoints, on local and spark.

The bounds are generous (5 checkpoints at a 100 ms interval within 60 s); exact figures belong
to ``benchmarks/checkpoint_latency.py``. Before source output was sliced, the chained shape
took about one checkpoint per 20 s: a reader call of 4,096 records at 0.5 ms each ran in one
step, and the trigger waited behind it.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.number_seq import NumberSequenceSource

#: The ``make_env`` fixture of tests/e2e/conftest.py (named here, not imported: the file then
#: runs with bare ``pytest``, without the repository root on ``sys.path``).
EnvFactory = Callable[..., StreamExecutionEnvironment]

CHECKPOINTS, DEADLINE_S = 5, 60.0


def sleepy(value: int) -> int:
    time.sleep(0.0005)
    return value


def spinning(value: int) -> int:
    until = time.perf_counter() + 0.001
    while time.perf_counter() < until:
        pass
    return value


def completed_within_deadline(client: Any) -> int:
    """Checkpoints completed once ``CHECKPOINTS`` did or the deadline passed; cancels."""
    url = client.get_rest_address()
    assert url is not None
    deadline, completed = time.monotonic() + DEADLINE_S, 0
    try:
        while time.monotonic() < deadline and completed < CHECKPOINTS:
            time.sleep(0.2)
            with urllib.request.urlopen(f"{url}/jobs/{client.get_job_id()}/checkpoints") as r:
                completed = int(json.load(r)["counts"]["completed"])
    finally:
        client.cancel()
    return completed


def config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"execution.checkpointing.interval": "100 ms", "rest.port": "0",
            "execution.checkpointing.dir": str(tmp_path), **extra}  # fmt: skip


@pytest.mark.parametrize("target", ["local", "spark"])
def test_aligned_checkpoints_with_a_slow_map_chained_to_the_source(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    env = make_env(parallelism=2, config=config(tmp_path))
    numbers = env.from_source(NumberSequenceSource(0, 10**12),
                              WatermarkStrategy.no_watermarks(), "numbers")  # fmt: skip
    (numbers.map(sleepy).key_by(lambda v: v % 1000).reduce(lambda a, b: a + b)
     .filter(lambda v: False).print())  # fmt: skip
    assert completed_within_deadline(env.execute_async("slow map chained")) >= CHECKPOINTS


@pytest.mark.parametrize("target", ["local", "spark"])
def test_unaligned_checkpoints_with_a_spinning_udf_under_backpressure(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    settings = config(tmp_path, **{"execution.checkpointing.unaligned.enabled": "true"})
    env = make_env(parallelism=1, config=settings)
    numbers = env.from_source(NumberSequenceSource(0, 10**12),
                              WatermarkStrategy.no_watermarks(), "numbers")  # fmt: skip
    numbers.map(lambda v: v).key_by(lambda v: v % 128).map(spinning).filter(lambda v: False).print()
    assert completed_within_deadline(env.execute_async("spinning udf")) >= CHECKPOINTS
