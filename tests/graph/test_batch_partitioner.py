"""key_by(columns) on batch streams: every row reaches the subtask the record path picks."""

from __future__ import annotations

import pyarrow as pa
import pytest

from undertow.core.errors import BatchError
from undertow.graph.batch_partitioner import BatchKeyGroupPartitioner
from undertow.graph.partitioners import KeyGroupStreamPartitioner


@pytest.mark.parametrize("channels", [1, 2, 3, 7, 12])
def test_rows_go_where_the_record_path_sends_their_keys(channels: int) -> None:
    keys = [i * 7919 % 1000 for i in range(500)]
    batch = pa.record_batch({"k": keys, "n": list(range(500))})
    part = BatchKeyGroupPartitioner(["k"], 128, "Map")
    part.setup(channels)
    records = KeyGroupStreamPartitioner(lambda r: r[0], 128)
    records.setup(channels)
    expected = records.route([(k, n) for k, n in zip(keys, range(500))], None)
    routed = part.route([batch], [42])
    got = {
        ch: [(r["k"], r["n"]) for b in bs for r in b.to_pylist()] for ch, (bs, _) in routed.items()
    }
    assert got == {ch: vals for ch, (vals, _) in expected.items()}  # same rows, same order
    assert all(stamps == [42] * len(bs) for bs, stamps in routed.values())


def test_a_null_key_or_a_missing_column_names_the_operator() -> None:
    part = BatchKeyGroupPartitioner(["k"], 128, "Map Batches")
    part.setup(2)
    with pytest.raises(BatchError, match=r"key_by\(\['k'\]\) after operator 'Map Batches'.*null"):
        part.route([pa.record_batch({"k": [None, 1]})], None)
    with pytest.raises(BatchError, match="no column 'k' in the batch"):
        part.route([pa.record_batch({"x": [1]})], None)
