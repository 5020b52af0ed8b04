"""The options of keyed state backends: which backend (hashmap, rocksdb or a factory's dotted
name), incremental checkpoints and their compaction, RocksDB's directories, timers and memory;
Flink's keys and defaults. Read into ``StateBackendSettings`` by ``state/factory.py`` and
``state/rocksdb_options.py``. Part of :class:`undertow.core.config.Options`.
"""

from __future__ import annotations

from undertow.core.config_option import (
    ConfigOption,
    at_least_one,
    bool_option,
    choice,
    int_option,
    memory_option,
    non_negative,
    positive,
    str_option,
)


def backend_type(value: str) -> str | None:
    """``state.backend.type``: a built-in backend, or a factory's dotted name (as Flink takes
    the fully qualified class name of a ``StateBackendFactory``)."""
    if value in ("hashmap", "rocksdb"):
        return None
    module, _, name = value.rpartition(".")
    if module and name.isidentifier() and all(p.isidentifier() for p in module.split(".")):
        return None
    return "must be one of hashmap, rocksdb, or the dotted name of a state backend factory"


class StateOptions:
    """State backend options."""

    STATE_BACKEND = str_option(
        "state.backend.type",
        "hashmap",
        "keyed state backend: hashmap (Python dicts), rocksdb (embedded RocksDB, on disk), or "
        "the dotted name of a state backend factory (module.name)",
        check=backend_type,
    )
    INCREMENTAL_CHECKPOINTS = bool_option(
        "execution.checkpointing.incremental",
        False,
        "incremental checkpoints: RocksDB uploads only new SST files into <job>/shared/, "
        "hashmap only the key groups changed since the last completed checkpoint",
    )
    HEAP_COMPACTION_INTERVAL = int_option(
        "state.backend.hashmap.incremental.compaction-interval",
        10,
        "hashmap incremental checkpoints: every n-th checkpoint after a full one is full again "
        "(1: every checkpoint is full)",
        check=positive,
    )
    HEAP_MAX_SPACE_AMPLIFICATION = ConfigOption(
        "state.backend.hashmap.incremental.max-space-amplification",
        float,
        2.0,
        "hashmap incremental checkpoints: a checkpoint is full again when the shared files it "
        "would reference exceed this many times the live state's bytes (dead key groups)",
        check=at_least_one,
    )
    ROCKSDB_LOCAL_DIR = str_option(
        "state.backend.rocksdb.localdir",
        "",
        "local working directory of the RocksDB state backend (default: the temp directory)",
    )
    ROCKSDB_TIMER_SERVICE = str_option(
        "state.backend.rocksdb.timer-service.factory",
        "ROCKSDB",
        "where the RocksDB backend keeps timers: ROCKSDB (a column family per timer queue, "
        "with a small in-memory head) or HEAP (Python heaps, in the snapshot as blobs)",
        check=choice("ROCKSDB", "HEAP"),
    )
    ROCKSDB_BLOCK_CACHE_SIZE = memory_option(
        "state.backend.rocksdb.block.cache-size",
        8 * 2**20,
        "RocksDB block cache per DB (unbounded mode)",
        check=positive,
    )
    ROCKSDB_WRITE_BUFFER_SIZE = memory_option(
        "state.backend.rocksdb.writebuffer.size",
        64 * 2**20,
        "RocksDB memtable size per column family (unbounded mode)",
        check=positive,
    )
    ROCKSDB_WRITE_BUFFER_COUNT = int_option(
        "state.backend.rocksdb.writebuffer.count",
        2,
        "RocksDB memtables per column family (unbounded mode)",
        check=positive,
    )
    ROCKSDB_FIXED_PER_SLOT = memory_option(
        "state.backend.rocksdb.memory.fixed-per-slot",
        0,
        "bound each RocksDB keyed backend: block cache and memtables share this size "
        "(0: unbounded)",
        check=non_negative,
    )
    ROCKSDB_WRITE_BUFFER_RATIO = ConfigOption(
        "state.backend.rocksdb.memory.write-buffer-ratio",
        float,
        0.5,
        "share of fixed-per-slot the memtables may take",
    )
    ROCKSDB_MEMORY_MANAGED = bool_option(
        "state.backend.rocksdb.memory.managed", False,
        "Flink's managed memory for RocksDB: not available in undertow (true is refused)",
    )  # fmt: skip
