"""``undertow checkpoints DIR``: a table of retained checkpoints, and exit code 1 when one does
not verify. Checkpoints are built with the storage layer and the metadata codec, then one is
corrupted the way a disk or an attacker would."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from undertow.cli.main import main
from undertow.core.units import human_bytes
from undertow.runtime.checkpoint.metadata import CheckpointMetadata, VertexMetadata, encode_metadata
from undertow.storage import CheckpointStorage, load_or_create_key

COMPLETED_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def commit(root: Path, job_id: str, checkpoint_id: int, key: bytes) -> int:
    storage = CheckpointStorage(str(root), job_id)
    state = pickle.dumps(list(range(100 * checkpoint_id)))
    handle = storage.write_file(checkpoint_id, "v0-s0.state", state)
    meta = CheckpointMetadata(
        job_id=job_id,
        checkpoint_id=checkpoint_id,
        trigger_timestamp=COMPLETED_MS - 100,
        completion_timestamp=COMPLETED_MS,
        is_savepoint=False,
        vertices=(VertexMetadata(0, "source", ("uid-0",), 1, 128, subtasks={0: handle}),),
        properties={"unaligned": "true", "persisted_data": "2048"} if checkpoint_id == 3 else {},
    )
    storage.commit_metadata(checkpoint_id, encode_metadata(meta, key))
    return handle.size


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "checkpoints"
    key = load_or_create_key()
    commit(directory, "job-good", 3, key)
    commit(directory, "job-bad", 7, key)
    state = directory / "job-bad" / "chk-7" / "v0-s0.state"
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit
    state.write_bytes(bytes(data))
    return directory


def rows(output: str) -> dict[str, list[str]]:
    """Job id -> the cells of its row (cells are separated by two or more spaces)."""
    lines = output.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "JOB ID", "CHECKPOINT", "COMPLETED", "SIZE", "TYPE", "IN-FLIGHT", "VERIFIES", "PROBLEM"
    ]  # fmt: skip
    table = {}
    for line in lines[1:]:
        if line.startswith("job-"):
            cells = re.split(r"\s{2,}", line, maxsplit=7)
            table[cells[0]] = cells
    return table


def test_lists_every_checkpoint_and_fails_if_one_does_not_verify(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["checkpoints", str(root)]) == 1
    out = capsys.readouterr().out
    table = rows(out)
    good, bad = table["job-good"], table["job-bad"]
    assert good[1:7] == ["3", "2023-11-14T22:13:20+00:00", good[3], "unaligned", "2.0 KiB", "yes"]
    assert re.fullmatch(r"\d+ B|\d+\.\d KiB", good[3])
    assert len(good) == 7  # no problem column content
    assert bad[1] == "7" and bad[4:7] == ["-", "-", "no"]  # metadata without the properties
    assert "v0-s0.state" in bad[7] and "chk-7" in bad[7]
    assert "1 of 2 checkpoints do not verify" in out


def test_one_job_only(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checkpoints", str(root), "--job", "job-good"]) == 0
    assert list(rows(capsys.readouterr().out)) == ["job-good"]


def test_a_wrong_key_verifies_nothing(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checkpoints", str(root), "--key", "not the key"]) == 1
    table = rows(capsys.readouterr().out)
    for cells in table.values():  # nothing is read from unauthenticated metadata
        assert cells[2:7] == ["-", "-", "-", "-", "no"]


def test_no_checkpoints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checkpoints", str(tmp_path / "empty")]) == 0
    assert "no completed checkpoints" in capsys.readouterr().out


def test_human_sizes() -> None:
    assert [human_bytes(n) for n in (0, 1023, 1024, 5 * 1024**2 + 1)] == [
        "0 B", "1023 B", "1.0 KiB", "5.0 MiB"
    ]  # fmt: skip
