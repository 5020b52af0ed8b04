"""A checkpoint triggered while a chained map turns slow on some records waits for a few of
them, not for a chunk sized while records were fast (:mod:`undertow.runtime.task.chunk_size`).

The job: numbers -> map (chained, p=1) -> discard. The map is fast for its first
``FAST_RECORDS`` records; after that every ``SLOW_EVERY``-th record sleeps ``SLOW_S`` (skewed
slow keys). Checkpoints are triggered every 300 ms. For each checkpoint triggered in the slow
phase (but the first) the test counts the slow records the map finished between the trigger
(REST's ``trigger_timestamp``) and the barrier reaching the map (its pre-barrier hook): what
the barrier waited for, counted in records, so a loaded machine moves it little.

With chunks that jumped back to a quarter of a slice at the fast records' cost, a chunk after
a run of fast records held ~2,000 records, dozens of them slow, and the barrier waited for the
rest of it; the chunk now regrows by doubling, so it holds about one slow record.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream import MapFunction, StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink
from undertow.datastream.connectors.number_seq import NumberSequenceSource

#: The ``make_env`` fixture of tests/e2e/conftest.py (named here, not imported: the file then
#: runs with bare ``pytest``, without the repository root on ``sys.path``).
EnvFactory = Callable[..., StreamExecutionEnvironment]

FAST_RECORDS, SLOW_EVERY, SLOW_S = 200_000, 50, 0.02
#: Checkpoints triggered in the slow phase to look at (after the first: it may fall in the
#: chunk the phase began in, sized at the fast records' cost, which no sizing bounds), and the
#: time allowed for them.
CHECKPOINTS, DEADLINE_S = 10, 90.0
#: Mean of the slow records finished between a trigger and its barrier at the map. Chunks that
#: regrow by doubling hold one or two (plus the trigger's way to the task); chunks that jumped
#: back to the fast records' size held up to ~40 (means of 10 to 16 in three runs).
MAX_MEAN_SLOW_RECORDS = 4.0


class SlowAfter(MapFunction):
    """Fast for ``FAST_RECORDS`` records, then every ``SLOW_EVERY``-th record sleeps; writes
    the wall-clock end of each slow record, and each barrier's arrival, to ``log``."""

    def __init__(self, log: str) -> None:
        self.log = log
        self.seen = 0
        self._out: Any = None

    def open(self, context: Any) -> None:
        self._out = open(self.log, "a", buffering=1)  # noqa: SIM115 - closed in close()

    def close(self) -> None:
        if self._out is not None:
            self._out.close()

    def map(self, value: int) -> int:
        self.seen += 1
        if self.seen > FAST_RECORDS and value % SLOW_EVERY == 0:
            time.sleep(SLOW_S)
            self._out.write(f"slow {time.time()}\n")
        return value

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self._out.write(f"barrier {checkpoint_id} {time.time()}\n")


def rest(address: str, path: str) -> Any:
    with urllib.request.urlopen(address + path, timeout=10) as response:
        return json.loads(response.read())


def slow_records_per_checkpoint(log: Path, history: list[dict[str, Any]]) -> dict[int, int]:
    """For each checkpoint of ``history`` triggered after the first slow record whose barrier
    reached the map: the slow records finished between its trigger and its barrier there."""
    slow: list[float] = []
    barriers: dict[int, float] = {}
    for line in log.read_text().splitlines():
        parts = line.split()
        if parts[0] == "slow":
            slow.append(float(parts[1]))
        elif len(parts) == 3:
            barriers[int(parts[1])] = float(parts[2])
    counts: dict[int, int] = {}
    if not slow:
        return counts
    for c in history:
        triggered = int(c["trigger_timestamp"]) / 1000
        arrived = barriers.get(int(c["id"]))
        if arrived is None or triggered < slow[0]:
            continue
        counts[int(c["id"])] = sum(1 for t in slow if triggered < t <= arrived)
    return counts


@pytest.mark.parametrize("target", ["local"])
def test_a_checkpoint_in_a_slow_phase_waits_for_a_few_slow_records(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    env = make_env(parallelism=1, config={
        "execution.checkpointing.interval": "300 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "rest.port": "0",
    })  # fmt: skip
    log = tmp_path / "map.log"
    numbers = env.from_source(NumberSequenceSource(0, 10**12),
                              WatermarkStrategy.no_watermarks(), "numbers")  # fmt: skip
    numbers.map(SlowAfter(str(log))).sink_to(DiscardingSink())
    client = env.execute_async("slow phase")
    seen: dict[int, int] = {}  # REST's history keeps the latest 10 checkpoints only
    counts: list[int] = []
    try:
        address = client.get_rest_address()
        assert address is not None
        jid = client.get_job_id()
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and len(counts) < CHECKPOINTS:
            time.sleep(0.5)
            if not log.exists():
                continue
            history = rest(address, f"/jobs/{jid}/checkpoints")["history"]
            seen.update(slow_records_per_checkpoint(log, history))
            counts = [seen[i] for i in sorted(seen)][1:]  # the first may be the phase change's
    finally:
        client.cancel()
        with pytest.raises(Exception):  # noqa: B017 - cancelled
            client.get_job_execution_result(timeout=60)
    print(f"slow records between trigger and barrier, per checkpoint: {counts}")
    assert len(counts) >= CHECKPOINTS, f"too few checkpoints reached the map: {counts}"
    assert statistics.mean(counts) <= MAX_MEAN_SLOW_RECORDS, counts
