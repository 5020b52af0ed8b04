"""RocksDB memory from Flink's option keys: bounded (fixed-per-slot: block cache and memtables
share one size) and unbounded (block cache and write buffers per Flink's defaults)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.factory import keyed_backend_factory
from undertow.state.rocksdb import RocksDBKeyedStateBackend
from undertow.state.rocksdb_options import RocksDBMemory


def test_options_are_read_from_flink_keys() -> None:
    memory = RocksDBMemory.from_config(Configuration({
        "state.backend.rocksdb.block.cache-size": "16 mb",
        "state.backend.rocksdb.writebuffer.size": "8 mb",
        "state.backend.rocksdb.writebuffer.count": "3",
        "state.backend.rocksdb.memory.fixed-per-slot": "256 mb",
        "state.backend.rocksdb.memory.write-buffer-ratio": "0.25",
    }))  # fmt: skip
    assert memory == RocksDBMemory(16 * 2**20, 8 * 2**20, 3, 256 * 2**20, 0.25)
    assert RocksDBMemory.from_config(Configuration()) == RocksDBMemory()


@pytest.mark.parametrize(
    "key, value, match",
    [
        ("state.backend.rocksdb.memory.managed", "true", "managed: true is not supported"),
        ("state.backend.rocksdb.memory.write-buffer-ratio", "1.5", r"must be in \(0, 1\)"),
        ("state.backend.rocksdb.memory.fixed-per-slot", "lots", "fixed-per-slot"),
    ],
)
def test_bad_memory_options_are_refused(key: str, value: str, match: str) -> None:
    config = Configuration({"state.backend.type": "rocksdb", key: value})
    with pytest.raises(ConfigurationError, match=match):
        keyed_backend_factory(config)


def _fill(backend: RocksDBKeyedStateBackend, n: int) -> None:
    state: Any = backend.get_partitioned_state(ValueStateDescriptor("v", None))
    keys, values = list(range(n)), [b"x" * 200] * n
    for i in range(0, n, 1000):
        backend.fold_values(state, keys[i : i + 1000], values[i : i + 1000], lambda a, b: b)


def _memtables(backend: RocksDBKeyedStateBackend) -> int:
    column: Any = backend.column("v")
    return int(column.property_int_value("rocksdb.cur-size-all-mem-tables"))


def test_fixed_per_slot_bounds_cache_and_memtables(tmp_path: Path) -> None:
    """60 MB written: with 16 MiB fixed the memtables stay within their half and the cache
    within the whole; unbounded, the 64 MiB memtable holds everything written."""
    fixed = RocksDBKeyedStateBackend("op", 128, range(128), lambda: 0, local_dir=str(tmp_path),
                                     memory=RocksDBMemory(fixed_per_slot=16 * 2**20))  # fmt: skip
    _fill(fixed, 250_000)
    resources = fixed._resources
    assert resources.cache.get_usage() <= 16 * 2**20 * 1.05
    assert resources.write_buffer_manager.get_buffer_size() == 8 * 2**20
    assert _memtables(fixed) <= 8 * 2**20 * 1.25, _memtables(fixed)
    fixed.dispose()
    default = RocksDBKeyedStateBackend("op", 128, range(128), lambda: 0, local_dir=str(tmp_path))
    _fill(default, 250_000)
    assert _memtables(default) > 32 * 2**20, "unbounded: Flink's 64 MiB memtable"
    assert default._resources.cache.get_usage() <= 8 * 2**20 * 1.05
    default.dispose()


def test_write_buffer_size_is_applied(tmp_path: Path) -> None:
    small = RocksDBKeyedStateBackend("op", 128, range(128), lambda: 0, local_dir=str(tmp_path),
                                     memory=RocksDBMemory(write_buffer_size=2**20))  # fmt: skip
    _fill(small, 100_000)  # 20 MB: unbounded, Flink's 64 MiB memtable would hold all of it
    # At most write_buffer_count (2) memtables of 1 MiB, each a little past its size (arena
    # blocks), plus one being flushed while the next fills: a flush that lags (a busy
    # machine) must not fail the test, a memtable that ignores the 1 MiB must
    assert _memtables(small) <= 4 * 2**20, _memtables(small)
    small.dispose()
