"""State backends with PyFlink's names (``pyflink.datastream.state_backend``).

A state backend object only records a choice in the job's configuration under Flink's keys;
``env.set_state_backend(backend)`` writes them:

* :class:`HashMapStateBackend` -> ``state.backend.type: hashmap`` (keyed state in Python dicts);
* :class:`EmbeddedRocksDBStateBackend` -> ``state.backend.type: rocksdb`` (keyed state in an
  embedded RocksDB per operator subtask, in ``state.backend.rocksdb.localdir``), and
  ``execution.checkpointing.incremental`` when ``enable_incremental_checkpointing`` is given.

With incremental checkpoints a RocksDB checkpoint uploads only the SST files that the last
completed checkpoint did not (into ``<dir>/<job>/shared/``); savepoints are canonical, which
either backend can restore. Plain value objects; not thread-safe (build them while declaring
the job). Reading one back reads the configuration, on purpose; the runtime reads it once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from undertow.core.config import Configuration, Options


class StateBackend(ABC):
    """Where keyed state lives while the job runs (PyFlink's ``StateBackend``)."""

    @abstractmethod
    def _configure(self, config: Configuration) -> None:
        """Write this choice into ``config`` under Flink's keys."""


class HashMapStateBackend(StateBackend):
    """Keyed state in the worker's memory, in Python dicts (the default). With
    ``execution.checkpointing.incremental`` a checkpoint writes only the key groups changed
    since the last completed one (:mod:`undertow.state.heap_incremental`)."""

    def _configure(self, config: Configuration) -> None:
        config.set(Options.STATE_BACKEND, "hashmap")

    def __str__(self) -> str:
        return "HashMapStateBackend"


class EmbeddedRocksDBStateBackend(StateBackend):
    """Keyed state in an embedded RocksDB per operator subtask, on local disk.

    ``enable_incremental_checkpointing``: ``None`` leaves ``execution.checkpointing.incremental``
    as configured; ``True`` asks for incremental checkpoints (native RocksDB files, only new ones
    uploaded); ``False`` for full, canonical ones.
    """

    def __init__(self, enable_incremental_checkpointing: bool | None = None) -> None:
        if enable_incremental_checkpointing not in (None, True, False):
            raise TypeError(
                "EmbeddedRocksDBStateBackend: enable_incremental_checkpointing must be None, "
                f"True or False, got {enable_incremental_checkpointing!r}"
            )
        self._incremental = enable_incremental_checkpointing
        self._paths: list[str] = []

    def is_incremental_checkpoints_enabled(self) -> bool:
        return bool(self._incremental)

    def set_db_storage_paths(self, *paths: str) -> None:
        """The local directory of the RocksDB files (ephemeral: state survives in checkpoints).

        Only one directory is supported; no argument restores the default (the temp directory).
        """
        if len(paths) > 1:
            raise ValueError(
                f"EmbeddedRocksDBStateBackend: one DB storage path is supported, got {paths!r}"
            )
        self._paths = list(paths)

    def get_db_storage_paths(self) -> list[str]:
        return list(self._paths)

    def _configure(self, config: Configuration) -> None:
        config.set(Options.STATE_BACKEND, "rocksdb")
        if self._incremental is not None:
            config.set(Options.INCREMENTAL_CHECKPOINTS, "true" if self._incremental else "false")
        config.set(Options.ROCKSDB_LOCAL_DIR, self._paths[0] if self._paths else "")

    def __str__(self) -> str:
        return f"EmbeddedRocksDBStateBackend(incremental={self._incremental}, paths={self._paths})"


class _NamedStateBackend(StateBackend):
    """A backend named by its factory's dotted name in ``state.backend.type``
    (:mod:`undertow.state.factory`)."""

    def __init__(self, factory_name: str) -> None:
        self.factory_name = factory_name

    def _configure(self, config: Configuration) -> None:
        config.set(Options.STATE_BACKEND, self.factory_name)

    def __str__(self) -> str:
        return f"StateBackend({self.factory_name})"


def state_backend_of(config: Configuration) -> StateBackend:
    """The state backend object that ``config`` describes (``env.get_state_backend()``)."""
    kind = config.get(Options.STATE_BACKEND)
    if kind == "hashmap":
        return HashMapStateBackend()
    if kind != "rocksdb":
        return _NamedStateBackend(kind)
    raw = config.to_dict().get(Options.INCREMENTAL_CHECKPOINTS.key)
    backend = EmbeddedRocksDBStateBackend(None if raw is None else str(raw).lower() == "true")
    local_dir = config.get(Options.ROCKSDB_LOCAL_DIR)
    if local_dir:
        backend.set_db_storage_paths(local_dir)
    return backend
