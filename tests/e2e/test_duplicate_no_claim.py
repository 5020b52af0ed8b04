"""NO_CLAIM duplicates instead of re-uploading (FLIP-193).

A first job on incremental RocksDB leaves a retained checkpoint (its SST files in its
``shared/``). A second job restores it in NO_CLAIM:

* before its first attempt the restored SST files are hard-linked into the second job's
  ``shared/`` under their names (duplicates: never the restored files themselves);
* its first checkpoint writes only the new delta (REST: ``checkpointed_size`` <
  ``state_size``; with re-upload both are equal: a full checkpoint);
* every file of the restored job's directory stays byte-identical while it runs.

The second job is cancelled with its checkpoint retained, the first job's directory is then
deleted whole, and a third job restores the second job's checkpoint (every file verified by
size and SHA-256 before use) and completes a checkpoint, the restore evidenced. That proves
the second job's checkpoints no longer depend on the restored snapshot's files. (The oracle
over a NO_CLAIM restore that runs to the end is test_incremental_checkpoints.py's.)
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from undertow.datastream import JobStatus
from undertow.storage import CheckpointStorage
from undertow.testing.oracle import OracleSource, build_pipeline

from .conftest import EnvFactory
from .restore_evidence import RestWatcher, assert_restores, evidence
from .test_incremental_checkpoints import (
    KEYS,
    RECORDS_PER_KEY,
    THROTTLED,
    _config,
    _incremental,
    _retained_incremental_checkpoint,
    _wait_for,
)


def _contents(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _same_file(duplicate: Path, original: Path) -> bool | None:
    """Whether ``duplicate`` is a hard link of ``original``; None if the running job deleted
    the duplicate since it was listed (a later checkpoint subsumed the last one using it)."""
    try:
        return os.path.samefile(duplicate, original)
    except FileNotFoundError:
        if original.exists():
            return None
        raise


def _start(make_env: EnvFactory, tmp_path: Path, snapshot: Path, name: str) -> tuple[Any, Any]:
    env = make_env(parallelism=2, config=_config(tmp_path, **{
        "execution.state-recovery.path": str(snapshot),
        "execution.state-recovery.claim-mode": "NO_CLAIM",
        "execution.checkpointing.num-retained": "1",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }))  # fmt: skip
    _incremental(env, tmp_path)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    client = env.execute_async(name)
    return client, RestWatcher(client)


def scenario_duplicate(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = _retained_incremental_checkpoint(make_env, tmp_path)
    restored_id = int(snapshot.name.rsplit("-", 1)[1])
    old_job_dir = snapshot.parent
    before = _contents(old_job_dir)
    restored_ssts = {n.split("/", 1)[1] for n in before if n.startswith("shared/")}
    assert restored_ssts, f"the retained checkpoint references shared files: {before}"
    capsys.readouterr()

    client, rest = _start(make_env, tmp_path, snapshot, "resumed in NO_CLAIM")
    new_job = client.get_job_id()
    new_shared = tmp_path / "checkpoints" / new_job / "shared"
    storage = CheckpointStorage(str(tmp_path / "checkpoints"), new_job)
    try:
        _wait_for(lambda: (len(storage.completed_checkpoint_ids()) >= 1
                  and len(rest.completed_sizes) >= 2)
                  or client.get_job_status().result().is_globally_terminal_state(),
                  "two checkpoints of the resumed job")  # fmt: skip
        assert client.get_job_status().result() is JobStatus.RUNNING, "cancelled before the end"
        duplicated = {p.name for p in new_shared.iterdir()} & restored_ssts
        linked = [_same_file(new_shared / n, old_job_dir / "shared" / n) for n in duplicated]
        client.cancel()
        _wait_for(
            lambda: client.get_job_status().result() is JobStatus.CANCELED, "the cancellation"
        )
    finally:
        rest_ids = rest.stop()
        client.cancel()
    ids = assert_restores(capsys.readouterr().err, rest_ids, restores=1)
    evidence(ids == [restored_id], f"restored {ids}, not {snapshot}")
    sizes = rest.completed_sizes
    first = min(cid for cid in sizes if cid > restored_id)
    checkpointed, state = sizes[first]
    # only a backend restored from the snapshot's SST files can reuse them: evidence too
    evidence(checkpointed < state,
             f"checkpoint {first}, the first after the NO_CLAIM restore, wrote {checkpointed} "
             f"of {state} bytes: it must reuse the duplicated SST files, not be full")  # fmt: skip
    assert duplicated, "restored SST files are duplicated into the job's own shared/"
    assert all(same for same in linked if same is not None), (
        "on a local file system a duplicate is a hard link"
    )
    assert _contents(old_job_dir) == before, "NO_CLAIM: every restored file stays byte-identical"

    second = Path(storage.checkpoint_pointer(max(storage.completed_checkpoint_ids())))
    shutil.rmtree(old_job_dir)  # the snapshot the second job restored is gone
    client, rest = _start(make_env, tmp_path, second, "resumed again, restored snapshot gone")
    third = CheckpointStorage(str(tmp_path / "checkpoints"), client.get_job_id())
    try:  # the restore verifies every file it reads (size, sha256) before the job runs
        _wait_for(lambda: bool(third.completed_checkpoint_ids())
                  or client.get_job_status().result().is_globally_terminal_state(),
                  "a checkpoint of the third job")  # fmt: skip
        assert client.get_job_status().result() is JobStatus.RUNNING, (
            client.get_job_status().result()
        )
    finally:
        rest_ids = rest.stop()
        client.cancel()
    ids = assert_restores(capsys.readouterr().err, rest_ids, restores=1)
    evidence(ids == [int(second.name.rsplit("-", 1)[1])], f"restored {ids}, not {second}")


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_no_claim_first_checkpoint_duplicates_and_is_independent_of_the_snapshot(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_duplicate(make_env, tmp_path, capsys)
