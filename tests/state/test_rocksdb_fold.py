"""The RocksDB backend's batch fold (:mod:`undertow.state.rocksdb_fold`): values are folded in
a write-back cache read with one multi-get and written in batches past its limit."""

from __future__ import annotations

from typing import Any

from undertow.state.rocksdb_fold import WriteBackCache, fold_cached
from undertow.state.rocksdb_states import decode_value, encode_value


class Column:
    """A column family in memory: ``get`` of one key or of a list (a multi-get), counted."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.multi_gets = 0

    def get(self, key: Any) -> Any:
        if isinstance(key, list):
            self.multi_gets += 1
            return [self.data.get(k) for k in key]
        return self.data.get(key)


class Batch:
    def __init__(self, column: Column) -> None:
        self.column, self.ops = column, []  # type: ignore[var-annotated]

    def put(self, key: bytes, value: bytes) -> None:
        self.ops.append((key, value))

    def delete(self, key: bytes) -> None:
        self.ops.append((key, None))


def apply(batch: Batch) -> None:
    for key, value in batch.ops:
        if value is None:
            batch.column.data.pop(key, None)
        else:
            batch.column.data[key] = value


def test_folds_read_once_and_write_back_past_the_limit() -> None:
    column = Column()
    column.data[b"a"] = encode_value(10)
    cache = WriteBackCache(lambda name: Batch(column), apply, limit=1)  # type: ignore[arg-type,return-value]
    entered: list[Any] = []
    keys = ["a", "b", "a"]
    out = fold_cached(cache, "sum", column, [k.encode() for k in keys], keys, [1, 2, 3],
                      lambda old, new: old + new, lambda key, _: entered.append(key))  # fmt: skip
    assert out == [11, 2, 14] and column.multi_gets == 1
    assert entered == ["a", "a"]  # the fold ran in its record's key; a first value is no fold
    assert len(cache) == 0  # 2 entries > limit 1: written back
    assert {k: decode_value(v) for k, v in column.data.items()} == {b"a": 14, b"b": 2}


def test_cached_entries_stay_until_flushed_and_a_dropped_cache_writes_nothing() -> None:
    column = Column()
    cache = WriteBackCache(lambda name: Batch(column), apply)  # type: ignore[arg-type,return-value]
    fold_cached(cache, "sum", column, [b"a"], ["a"], [5], lambda o, n: o + n, lambda k, d: None)
    assert column.data == {} and len(cache) == 1
    cache.table("sum")[b"gone"] = None  # a deletion
    column.data[b"gone"] = encode_value(1)
    cache.flush("sum")
    assert {k: decode_value(v) for k, v in column.data.items()} == {b"a": 5}
    fold_cached(cache, "sum", column, [b"a"], ["a"], [1], lambda o, n: o + n, lambda k, d: None)
    cache.drop()
    cache.flush()
    assert decode_value(column.data[b"a"]) == 5
