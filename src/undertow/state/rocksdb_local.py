"""The RocksDB backends' local directories: naming, creation, the sweep of dead processes'
directories, directories for downloads of native state for a restore, and deletion.

A DB directory carries the pid of its process, so a backend can delete the directories of
workers killed with SIGKILL (which cannot clean up) when it creates its own. Every function
does blocking file-system I/O: a backend's constructor and finalizer, or the I/O pool.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from rocksdict import Rdict

#: DB directories are named ``undertow-rocksdb-<pid>-<operator>-<random>``.
_PREFIX = "undertow-rocksdb-"


def sweep_dead_directories(parent: str) -> list[str]:
    """Delete the DB directories under ``parent`` whose process is gone (a worker killed with
    SIGKILL cannot clean up); returns their names. The directory name carries the pid, so
    ``parent`` must be local to this machine (as ``state.backend.rocksdb.localdir`` is)."""
    swept: list[str] = []
    try:
        names = os.listdir(parent)
    except FileNotFoundError:
        return swept
    for name in names:
        if not name.startswith(_PREFIX):
            continue
        pid_text = name[len(_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
            swept.append(name)
        except PermissionError:
            continue  # alive, another user's
    return swept


def new_restore_directory(local_dir: str) -> str:
    """A fresh directory for a downloaded native checkpoint of this process, under
    ``local_dir`` (``""``: the temp directory), created with its parents."""
    parent = local_dir or tempfile.gettempdir()
    os.makedirs(parent, exist_ok=True)
    return tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-restore-", dir=parent)


def new_db_directory(parent: str, label: str) -> str:
    """A fresh DB directory under ``parent`` for this process, ``label`` naming the operator."""
    return tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-{label}-", dir=parent)


def close_and_delete(db: Rdict, columns: dict[str, Rdict], directory: str) -> None:
    """Close a DB and its column families, then delete its directory (a backend's finalizer)."""
    for column in columns.values():
        column.close()
    columns.clear()
    db.close()
    shutil.rmtree(directory, ignore_errors=True)
