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


def test_a_pruned_partitioner_sends_only_the_columns_its_consumer_reads() -> None:
    """The same rows to the same channels as the whole batches, with only the key and the
    read columns, in the batch's order; a batch lacking a read column goes whole (the
    consumer names the missing one beside the batch's real columns); a batch of only those
    columns goes as it is."""
    batch = pa.record_batch(
        {"v": list(range(300)), "pad": ["x"] * 300, "k": [i % 11 for i in range(300)]}
    )
    whole = BatchKeyGroupPartitioner(["k"], 128, "Map")
    pruned = whole.pruned_to(["v"])
    for part in (whole, pruned):
        part.setup(3)
    routed, kept = whole.route([batch], [5]), pruned.route([batch], [5])
    assert routed.keys() == kept.keys()
    for ch, (batches, stamps) in kept.items():
        assert [b.schema.names for b in batches] == [["v", "k"]] and stamps == [5]
        assert batches[0].equals(routed[ch][0][0].select(["v", "k"]))
    lacking = pa.record_batch({"k": [1, 2], "pad": ["a", "b"]})
    assert [b.schema.names for bs, _ in pruned.route([lacking], None).values() for b in bs] == [
        ["k", "pad"]
    ] * 2
    narrow = pa.record_batch({"k": [3], "v": [4]})
    (((only,), _),) = pruned.route([narrow], None).values()
    assert only is narrow, "nothing to prune: the batch itself"
