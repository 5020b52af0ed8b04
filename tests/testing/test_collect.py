"""The testing kit's view of an ``execute_and_collect`` iterator: the driver's statistics of its
sink (window, largest batch) and the checkpoints its job completed."""

from __future__ import annotations

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment
from undertow.testing.collect import collect_statistics, completed_checkpoints


def test_statistics_and_checkpoints_of_a_small_job() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads", "rest.port": "-1",
        "undertow.collect.buffer-size": "1 mb",
    }))  # fmt: skip
    env.set_parallelism(1)
    with env.from_collection(list(range(100))).execute_and_collect() as results:
        assert list(results) == list(range(100))
        stats = collect_statistics(results)
        checkpoints = completed_checkpoints(results)
    assert stats.window.window == 2**20 and stats.window.unread == 0
    assert 0 < stats.largest_batch <= stats.peak_unread <= 2**20 + stats.largest_batch
    assert checkpoints == 0  # checkpointing is off
