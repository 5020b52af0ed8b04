"""A checkpoint whose ``_metadata`` would exceed ``undertow.checkpointing.metadata.max-size``
fails when it is written, naming checkpoint, size, limit and option, and leaves nothing that
looks restorable (the reader applies the same limit)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.storage import CheckpointStorage


def test_a_checkpoint_over_the_metadata_limit_fails_at_write_time(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path),
        "undertow.checkpointing.metadata.max-size": "200",
        "restart-strategy.type": "none",
    }))  # fmt: skip
    env.set_parallelism(2)
    source = DataGeneratorSource(lambda i: (i % 3, 1), count=100_000, records_per_second=5000)
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "gen")
        .key_by(lambda t: t[0]).sum(1).sink_to(DiscardingSink())
    )  # fmt: skip
    with pytest.raises(Exception) as info:
        env.execute("metadata over the limit")
    message = str(info.value)
    found = re.search(r"checkpoint (\d+) of job '[0-9a-f]+' fails: its _metadata would be "
                      r"(\d+) bytes, over the limit of 200 bytes", message)  # fmt: skip
    assert found is not None, message
    assert int(found.group(2)) > 200
    assert "undertow.checkpointing.metadata.max-size" in message
    jobs = [d.name for d in tmp_path.iterdir() if d.is_dir()]
    assert all(CheckpointStorage(str(tmp_path), j).completed_checkpoint_ids() == [] for j in jobs)
