"""The RocksDB backends' local directories (:mod:`undertow.state.rocksdb_local`): named by
process, swept when their process is gone, deleted with their DB."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rocksdict import Rdict

from undertow.state.rocksdb_local import (
    close_and_delete,
    new_db_directory,
    new_restore_directory,
    sweep_dead_directories,
)


def dead_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_directories_carry_the_pid_and_only_dead_processes_are_swept(tmp_path: Path) -> None:
    mine = new_db_directory(str(tmp_path), "map")
    assert Path(mine).name.startswith(f"undertow-rocksdb-{os.getpid()}-map-")
    dead = tmp_path / f"undertow-rocksdb-{dead_pid()}-map-x"
    dead.mkdir()
    (tmp_path / "unrelated").mkdir()
    assert sweep_dead_directories(str(tmp_path)) == [dead.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([Path(mine).name, "unrelated"])
    assert sweep_dead_directories(str(tmp_path / "missing")) == []


def test_a_restore_directory_is_made_with_its_parents(tmp_path: Path) -> None:
    made = new_restore_directory(str(tmp_path / "a" / "b"))
    assert os.path.isdir(made) and "-restore-" in Path(made).name


def test_close_and_delete_closes_the_columns_and_removes_the_directory(tmp_path: Path) -> None:
    directory = new_db_directory(str(tmp_path), "op")
    db = Rdict(directory)
    db[b"k"] = b"v"
    columns: dict[str, Rdict] = {}
    close_and_delete(db, columns, directory)
    assert not os.path.exists(directory) and columns == {}
