"""Async I/O under the exactly-once oracle (TESTING.md), with a scheduled failure.

A simulated model service answers every record after a random few milliseconds, with up to
``capacity`` requests in flight per subtask, so every checkpoint holds requests in flight. A
map chained behind the async operator fails once after the second completed checkpoint; the
job restarts from its latest checkpoint. All six oracle counts must be 0, and the restored
attempt must have re-issued the requests that were in flight at that checkpoint (Flink's
``AsyncWaitOperator`` keeps them in its state).
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from undertow.common import Time, WatermarkStrategy
from undertow.datastream import AsyncDataStream, AsyncFunction
from undertow.datastream.connectors.discard import DiscardingSink
from undertow.testing.oracle import (
    FailingMap,
    OracleResult,
    OracleSource,
    OracleStatefulFunction,
    VerifyingMap,
    VerifyingSink,
    oracle_key,
)

from .conftest import EnvFactory
from .restore_evidence import evidence
from .test_oracle import THROTTLED, checkpointing, restart_reasons, run

KEYS, RECORDS_PER_KEY = 20, 1000
RESTORED = "async_requests_restored"


class ModelService(AsyncFunction[Any, Any]):
    """A remote model: answers with the record itself after 2-20 ms."""

    async def async_invoke(self, value: Any) -> list[Any]:
        await asyncio.sleep(random.uniform(0.002, 0.02))
        return [value]


@pytest.mark.restores(catches=["operator-state"])
@pytest.mark.parametrize("ordered", [True, False], ids=["ordered", "unordered"])
def test_in_flight_requests_survive_a_failure_exactly_once(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], ordered: bool
) -> None:
    p = 2
    env = make_env(parallelism=p, config=checkpointing(tmp_path, restarts=1))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "oracle")
    stream = stream.uid("oracle-source").set_parallelism(p)
    checked = stream.rebalance().map(VerifyingMap("before-async")).uid("verify-before-async")
    checked = checked.set_parallelism(p + 1)
    wait = AsyncDataStream.ordered_wait if ordered else AsyncDataStream.unordered_wait
    answered = wait(checked, ModelService(), Time.seconds(30), capacity=50)
    answered = answered.uid("model-service").set_parallelism(p + 1)
    failing = answered.map(FailingMap([2])).uid("failing-after-async").set_parallelism(p + 1)
    verified = failing.map(VerifyingMap("after-async")).uid("verify-after-async")
    verified = verified.set_parallelism(p + 1)
    stateful = verified.key_by(oracle_key).process(OracleStatefulFunction())
    stateful = stateful.uid("oracle-stateful").set_parallelism(p)
    sink = stateful.key_by(oracle_key).process(VerifyingSink(RECORDS_PER_KEY))
    sink = sink.uid("oracle-verifying-sink").set_parallelism(p)
    sink.sink_to(DiscardingSink()).uid("oracle-discard").set_parallelism(p)

    result = run(env, "async oracle")

    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    reasons = restart_reasons(capsys.readouterr().err)
    # the restored attempt re-issued the requests in flight at the checkpoint it started from
    evidence(
        result.get_task_counters().get(RESTORED, 0) > 0,
        f"no in-flight request was restored: {result.get_task_counters()}",
    )
    oracle.assert_restored()
    oracle.assert_exactly_once()
    assert oracle.restarts == 1, (oracle, reasons)
    assert len(reasons) == 1 and "InjectedFailure: FailingMap" in reasons[0], reasons
