"""Memory of the RocksDB backend: block cache and write buffers, from Flink's option keys.

Each keyed backend's DB has one LRU block cache shared by its column families. Bounded
(``state.backend.rocksdb.memory.fixed-per-slot`` set): block cache plus memtables stay near
the fixed size; unbounded (the default): Flink's per-DB and per-column-family defaults.
``memory.managed`` set to true is refused (undertow has no managed memory pool).

Pure apart from building rocksdict objects.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocksdict import BlockBasedOptions, Cache, Options, WriteBufferManager

from undertow.core.config import Configuration
from undertow.core.config import Options as ConfigOptions
from undertow.core.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class RocksDBMemory:
    """The memory settings of a RocksDB backend (see the module docstring); sizes in bytes,
    ``fixed_per_slot`` 0 for unbounded."""

    block_cache_size: int = 8 * 2**20
    write_buffer_size: int = 64 * 2**20
    write_buffer_count: int = 2
    fixed_per_slot: int = 0
    write_buffer_ratio: float = 0.5

    @classmethod
    def from_config(cls, config: Configuration) -> RocksDBMemory:
        if config.get(ConfigOptions.ROCKSDB_MEMORY_MANAGED):
            raise ConfigurationError(
                "state.backend.rocksdb.memory.managed: true is not supported (undertow has no "
                "managed memory); bound RocksDB with state.backend.rocksdb.memory.fixed-per-slot"
            )
        ratio = config.get(ConfigOptions.ROCKSDB_WRITE_BUFFER_RATIO)
        if not 0 < ratio < 1:
            raise ConfigurationError(
                f"state.backend.rocksdb.memory.write-buffer-ratio must be in (0, 1), got {ratio}"
            )
        return cls(
            block_cache_size=config.get(ConfigOptions.ROCKSDB_BLOCK_CACHE_SIZE),
            write_buffer_size=config.get(ConfigOptions.ROCKSDB_WRITE_BUFFER_SIZE),
            write_buffer_count=config.get(ConfigOptions.ROCKSDB_WRITE_BUFFER_COUNT),
            fixed_per_slot=config.get(ConfigOptions.ROCKSDB_FIXED_PER_SLOT),
            write_buffer_ratio=ratio,
        )

    def build(self) -> RocksDBResources:
        """The cache (and write buffer manager) one DB shares among its column families."""
        if self.fixed_per_slot:
            cache = Cache(self.fixed_per_slot)
            manager = WriteBufferManager.new_write_buffer_manager_with_cache(
                int(self.fixed_per_slot * self.write_buffer_ratio), False, cache
            )
            return RocksDBResources(self, cache, manager)
        return RocksDBResources(self, Cache(self.block_cache_size), None)


@dataclass(frozen=True, slots=True)
class RocksDBResources:
    """The shared objects of one DB; :meth:`options` makes the options of the DB and of each
    column family (raw mode: keys and values are bytes)."""

    memory: RocksDBMemory
    cache: Any
    write_buffer_manager: Any

    def options(self) -> Options:
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        table = BlockBasedOptions()
        table.set_block_cache(self.cache)
        memory = self.memory
        if self.write_buffer_manager is not None:
            table.set_cache_index_and_filter_blocks(True)
            table.set_pin_l0_filter_and_index_blocks_in_cache(True)
            options.set_write_buffer_manager(self.write_buffer_manager)
            # memtables as Flink sizes them under a bounded budget: several per budget
            options.set_write_buffer_size(
                max(2**20, int(memory.fixed_per_slot * memory.write_buffer_ratio) // 4)
            )
        else:
            options.set_write_buffer_size(memory.write_buffer_size)
            options.set_max_write_buffer_number(memory.write_buffer_count)
        options.set_block_based_table_factory(table)
        return options
