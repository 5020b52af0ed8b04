"""Choosing the keyed state backend: PyFlink's state backend classes, Flink's option keys."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from undertow.common import Configuration
from undertow.core.config import ConfigurationError
from undertow.datastream import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StreamExecutionEnvironment,
)
from undertow.state.factory import keyed_backend_factory
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.rocksdb import RocksDBKeyedStateBackend


def _env(**settings: str) -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment(Configuration(settings))


def test_default_is_hashmap() -> None:
    env = _env()
    assert isinstance(env.get_state_backend(), HashMapStateBackend)
    factory = keyed_backend_factory(env.get_configuration())
    assert isinstance(factory("op", 8, range(8), lambda: 0), HeapKeyedStateBackend)


def test_set_state_backend_writes_flinks_keys(tmp_path: Path) -> None:
    env = _env()
    rocks = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=False)
    rocks.set_db_storage_paths(str(tmp_path / "db"))
    assert env.set_state_backend(rocks) is env
    config = env.get_configuration().to_dict()
    assert config["state.backend.type"] == "rocksdb"
    assert config["execution.checkpointing.incremental"] == "false"
    assert config["state.backend.rocksdb.localdir"] == str(tmp_path / "db")
    back = env.get_state_backend()
    assert isinstance(back, EmbeddedRocksDBStateBackend)
    assert back.get_db_storage_paths() == [str(tmp_path / "db")]
    assert not back.is_incremental_checkpoints_enabled()

    backend = keyed_backend_factory(env.get_configuration())("op", 8, range(8), lambda: 0)
    assert isinstance(backend, RocksDBKeyedStateBackend)
    assert Path(backend.directory).parent == tmp_path / "db"
    backend.dispose()
    assert list((tmp_path / "db").iterdir()) == []

    env.set_state_backend(HashMapStateBackend())
    assert env.get_configuration().to_dict()["state.backend.type"] == "hashmap"


def test_configuration_selects_rocksdb(tmp_path: Path) -> None:
    env = _env(**{"state.backend.type": "rocksdb", "state.backend.rocksdb.localdir": str(tmp_path)})
    assert isinstance(env.get_state_backend(), EmbeddedRocksDBStateBackend)
    backend = keyed_backend_factory(env.get_configuration())("op", 8, range(8), lambda: 0)
    assert isinstance(backend, RocksDBKeyedStateBackend)
    backend.dispose()


def test_incremental_rocksdb_is_selected(tmp_path: Path) -> None:
    env = _env()
    rocks = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    rocks.set_db_storage_paths(str(tmp_path))
    env.set_state_backend(rocks)
    assert env.get_configuration().to_dict()["execution.checkpointing.incremental"] == "true"
    back = env.get_state_backend()
    assert isinstance(back, EmbeddedRocksDBStateBackend)
    assert back.is_incremental_checkpoints_enabled()
    for config in (
        env.get_configuration(),
        Configuration(
            {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true"}
        ),
    ):
        backend = keyed_backend_factory(config)("op", 8, range(8), lambda: 0)
        assert isinstance(backend, RocksDBKeyedStateBackend) and backend.incremental
        backend.dispose()
    heap = keyed_backend_factory(Configuration({
        "execution.checkpointing.incremental": "true",
        "state.backend.hashmap.incremental.compaction-interval": "3",
    }))("op", 8, range(8), lambda: 0)  # fmt: skip
    assert isinstance(heap, HeapKeyedStateBackend) and heap.incremental
    assert heap._dirty is not None and heap._dirty.policy.interval == 3
    plain = keyed_backend_factory(Configuration({}))("op", 8, range(8), lambda: 0)
    assert isinstance(plain, HeapKeyedStateBackend) and not plain.incremental


def test_bad_choices_are_rejected() -> None:
    with pytest.raises(ConfigurationError, match=r"state\.backend\.type.*must be one of"):
        _env(**{"state.backend.type": "memory"})
    with pytest.raises(ConfigurationError, match=r"execution\.checkpointing\.incremental"):
        _env(**{"execution.checkpointing.incremental": "sometimes"})
    with pytest.raises(TypeError, match="enable_incremental_checkpointing"):
        EmbeddedRocksDBStateBackend(enable_incremental_checkpointing="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="StateBackend"):
        _env().set_state_backend("rocksdb")  # type: ignore[arg-type]


def test_directories_of_dead_processes_are_swept(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"undertow-rocksdb-{dead.pid}-op-abc"
    (stale / "db").mkdir(parents=True)
    alive = tmp_path / f"undertow-rocksdb-{os.getpid()}-op-def"
    alive.mkdir()
    other = tmp_path / "unrelated"
    other.mkdir()
    backend = RocksDBKeyedStateBackend("op", 8, range(8), lambda: 0, local_dir=str(tmp_path))
    assert not stale.exists(), "a dead worker's DB directory is swept"
    assert alive.exists() and other.exists()
    assert Path(backend.directory).name.startswith(f"undertow-rocksdb-{os.getpid()}-op-")
    backend.dispose()


def test_a_backend_named_by_its_factory() -> None:
    """``state.backend.type`` takes a factory's dotted name (Flink: a StateBackendFactory's
    class name); one that cannot be imported or called is named in the error."""
    named = Configuration({"state.backend.type": "e2e.dict_backend.dict_backend"})
    backend = keyed_backend_factory(named)("op", 8, range(8), lambda: 0)
    assert type(backend).__name__ == "DictBackend" and backend.takes_native_checkpoints
    assert str(StreamExecutionEnvironment.get_execution_environment(named).get_state_backend()) \
        == "StateBackend(e2e.dict_backend.dict_backend)"  # fmt: skip
    missing = Configuration({"state.backend.type": "no_such_module.factory"})
    with pytest.raises(ConfigurationError, match=r"state\.backend\.type.*'no_such_module'"):
        keyed_backend_factory(missing)
    absent = Configuration({"state.backend.type": "undertow.state.heap.no_such_factory"})
    with pytest.raises(ConfigurationError, match=r"no callable 'no_such_factory'"):
        keyed_backend_factory(absent)


def test_state_backend_settings_read_the_configured_backends_options_only() -> None:
    from undertow.state.factory import StateBackendSettings

    bogus = {"state.backend.rocksdb.timer-service.factory": "BOGUS"}
    assert StateBackendSettings.of(Configuration(bogus)) == StateBackendSettings()
    with pytest.raises(ConfigurationError, match=r"timer-service\.factory.*BOGUS"):
        StateBackendSettings.of(Configuration({"state.backend.type": "rocksdb", **bogus}))
    settings = StateBackendSettings.of(Configuration({
        "state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true",
        "state.backend.rocksdb.timer-service.factory": "HEAP",
    }))  # fmt: skip
    assert (settings.kind, settings.incremental, settings.timer_service) == (
        "rocksdb", True, "HEAP")  # fmt: skip
