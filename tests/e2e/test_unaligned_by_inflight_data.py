"""An aligned checkpoint switches to unaligned by the bytes queued ahead of its barrier
(``execution.checkpointing.unaligned.max-inflight-data``, FLIP-76's
``UNALIGNED_WITH_MAX_INFLIGHT_DATA``), long before its aligned-checkpoint timeout.

The oracle pipeline under backpressure (a spinning sink, one-buffer channels of 4 KiB) with an
aligned-checkpoint timeout of one hour and a limit of 1 KiB: checkpoints complete unaligned,
with in-flight data, within the run (seconds); the oracle counts no loss and no duplicate.
Without the limit every checkpoint of this run would complete aligned.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline

from .conftest import EnvFactory

KEYS, RECORDS_PER_KEY = 10, 150
#: Not kills.COMPLETED on purpose: this one also reads each completed checkpoint's duration and
#: whether it ended aligned or unaligned.
COMPLETED_HOW = re.compile(
    r"^\[undertow\] checkpoint (\d+) completed in (\d+) ms, .*\((unaligned|aligned), in-flight",
    re.M,
)


def scenario_switch_by_bytes(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "rest.port": "0",
        "taskmanager.memory.segment-size": "4 kb",
        "taskmanager.network.memory.buffers-per-channel": "1",
        "taskmanager.network.memory.floating-buffers-per-gate": "1",
        "taskmanager.network.memory.max-buffers-per-channel": "2",
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.aligned-checkpoint-timeout": "1 h",
        "execution.checkpointing.unaligned.max-inflight-data": "1 kb",
    })  # fmt: skip
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=2_000.0)
    build_pipeline(env, source, sink_spin_s=0.0005)
    result = env.execute("aligned, switching by in-flight bytes")
    console = capsys.readouterr().err
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    oracle.assert_exactly_once()
    completed = [(int(cid), int(ms), how) for cid, ms, how in COMPLETED_HOW.findall(console)]
    unaligned = [(cid, ms) for cid, ms, how in completed if how == "unaligned"]
    assert unaligned, (
        f"no checkpoint switched to unaligned by in-flight bytes (timeout 1 h): {completed}"
    )
    assert all(ms < 3_600_000 for _, ms in unaligned), "switched before the timeout"


@pytest.mark.parametrize("target", ["local-threads"])
def test_an_aligned_checkpoint_switches_to_unaligned_by_inflight_bytes(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_switch_by_bytes(make_env, tmp_path, capsys)
