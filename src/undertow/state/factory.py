"""Which keyed state backend a job uses: ``state.backend.type`` (Flink's key) -> a factory.

``hashmap`` (the default) builds the heap backend, ``rocksdb`` the RocksDB backend; any other
value is the dotted name (``package.module.name``) of a :data:`StateBackendFactory`, so a third
backend needs no change to the runtime. Reading the options validates them (an unknown backend
type raises ``ConfigurationError`` naming the key).

Called once per keyed operator when a subtask builds its operator chain; pure apart from the
RocksDB backend creating its directory when the factory is called.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from undertow.core.config import Configuration, Options
from undertow.core.errors import ConfigurationError
from undertow.state.backend import KeyedStateBackend, KeyedStateBackendFactory
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.heap_incremental import CompactionPolicy
from undertow.state.rocksdb import RocksDBKeyedStateBackend
from undertow.state.rocksdb_options import RocksDBMemory

#: A backend named in ``state.backend.type``: the job's configuration -> its backend factory.
StateBackendFactory = Callable[[Configuration], KeyedStateBackendFactory]


@dataclass(frozen=True, slots=True)
class StateBackendSettings:
    """What the state layer reads of the configuration, once (:meth:`of`); a bad value fails
    there with a ``ConfigurationError`` naming the option and the value."""

    #: ``state.backend.type``: ``hashmap``, ``rocksdb`` or a factory's dotted name.
    kind: str = "hashmap"
    #: ``execution.checkpointing.incremental``.
    incremental: bool = False
    #: ``state.backend.hashmap.incremental.*`` (heap incremental checkpoints).
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    #: ``state.backend.rocksdb.localdir`` (``""``: the temp directory).
    local_dir: str = ""
    #: ``state.backend.rocksdb.timer-service.factory``.
    timer_service: str = "ROCKSDB"
    #: ``state.backend.rocksdb.memory.*``.
    memory: RocksDBMemory = field(default_factory=RocksDBMemory)
    #: The factory a dotted ``kind`` names, called with the configuration (None: built in).
    named: KeyedStateBackendFactory | None = None

    @classmethod
    def of(cls, config: Configuration) -> StateBackendSettings:
        """Read the options of the configured backend only (a hashmap job is not refused for
        a RocksDB option's value, nor a RocksDB job for a heap one's)."""
        kind = config.get(Options.STATE_BACKEND)
        if kind not in ("hashmap", "rocksdb"):
            return cls(kind=kind, named=_named_factory(kind)(config))
        incremental = config.get(Options.INCREMENTAL_CHECKPOINTS)
        if kind == "hashmap":
            if not incremental:
                return cls(kind=kind)
            compaction = CompactionPolicy(
                config.get(Options.HEAP_COMPACTION_INTERVAL),
                config.get(Options.HEAP_MAX_SPACE_AMPLIFICATION),
            )
            return cls(kind=kind, incremental=True, compaction=compaction)
        return cls(
            kind=kind,
            incremental=incremental,
            local_dir=config.get(Options.ROCKSDB_LOCAL_DIR),
            timer_service=config.get(Options.ROCKSDB_TIMER_SERVICE),
            memory=RocksDBMemory.from_config(config),
        )


def keyed_backend_factory(config: Configuration) -> KeyedStateBackendFactory:
    """The factory of the configured keyed state backend (see the module docstring)."""
    return backend_factory_of(StateBackendSettings.of(config))


def backend_factory_of(settings: StateBackendSettings) -> KeyedStateBackendFactory:
    """The factory of the backend ``settings`` describe."""
    if settings.named is not None:
        return settings.named
    if settings.kind == "hashmap":
        if not settings.incremental:
            return HeapKeyedStateBackend
        return functools.partial(
            HeapKeyedStateBackend, incremental=True, compaction=settings.compaction
        )

    def rocksdb(
        operator_name: str, max_parallelism: int, key_groups: range, clock: Callable[[], int]
    ) -> KeyedStateBackend:
        return RocksDBKeyedStateBackend(
            operator_name,
            max_parallelism,
            key_groups,
            clock,
            local_dir=settings.local_dir,
            incremental=settings.incremental,
            timer_service=settings.timer_service,
            memory=settings.memory,
        )

    return rocksdb


def _named_factory(name: str) -> StateBackendFactory:
    """The :data:`StateBackendFactory` at the dotted ``name``; an error names the option."""
    module_name, _, attribute = name.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigurationError(
            f"state.backend.type: cannot import module {module_name!r} of state backend "
            f"factory {name!r}: {err}"
        ) from err
    factory: StateBackendFactory | None = module.__dict__.get(attribute)
    if not callable(factory):
        raise ConfigurationError(
            f"state.backend.type: {name!r} names no state backend factory (module "
            f"{module_name!r} has no callable {attribute!r})"
        )
    return factory
