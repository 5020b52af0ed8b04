"""State backend objects (:mod:`undertow.datastream.state_backend`) only write Flink's keys, and
reading the configuration back gives an equal choice."""

from __future__ import annotations

import pytest

from undertow.core.config import Configuration
from undertow.datastream.state_backend import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    state_backend_of,
)


def written(backend: HashMapStateBackend | EmbeddedRocksDBStateBackend) -> dict[str, str]:
    config = Configuration()
    backend._configure(config)
    return config.to_dict()


def test_each_backend_writes_flinks_keys() -> None:
    assert written(HashMapStateBackend()) == {"state.backend.type": "hashmap"}
    rocks = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    rocks.set_db_storage_paths("/tmp/rocks")
    assert written(rocks) == {
        "state.backend.type": "rocksdb",
        "execution.checkpointing.incremental": "true",
        "state.backend.rocksdb.localdir": "/tmp/rocks",
    }
    assert "execution.checkpointing.incremental" not in written(EmbeddedRocksDBStateBackend())


def test_the_configuration_reads_back_as_the_same_choice() -> None:
    rocks = EmbeddedRocksDBStateBackend(False)
    rocks.set_db_storage_paths("/tmp/r")
    back = state_backend_of(Configuration(written(rocks)))
    assert isinstance(back, EmbeddedRocksDBStateBackend)
    assert str(back) == str(rocks) and back.get_db_storage_paths() == ["/tmp/r"]
    assert isinstance(state_backend_of(Configuration()), HashMapStateBackend)
    named = state_backend_of(Configuration({"state.backend.type": "my.module.Factory"}))
    assert str(named) == "StateBackend(my.module.Factory)"


def test_bad_arguments_are_refused_naming_the_class() -> None:
    with pytest.raises(TypeError, match="EmbeddedRocksDBStateBackend: enable_incremental"):
        EmbeddedRocksDBStateBackend("yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one DB storage path is supported"):
        EmbeddedRocksDBStateBackend().set_db_storage_paths("/a", "/b")
