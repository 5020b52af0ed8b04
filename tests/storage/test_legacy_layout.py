"""Checkpoints of earlier undertow: JSON ``_metadata`` (format 1), key in ``<root>/_undertow_key``.

Such a checkpoint is made here from a real retained checkpoint: its metadata re-encoded in
format 1 under a key written to ``_undertow_key`` in the checkpoint root, as earlier undertow
did. Restoring it without the key is refused with a message saying how; with the key passed
explicitly the job resumes from it (format 1 is still read), and ``undertow checkpoints``
says the same as the restore.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import pytest
from tests.job_end import wait_until_retained

from undertow.cli.checkpoints import list_checkpoints
from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource
from undertow.runtime.checkpoint.metadata import (
    JSON_FORMAT_VERSION,
    decode_metadata,
    encode_metadata,
)
from undertow.storage import LEGACY_KEY_FILE, CheckpointStorage, read_key

RECORDS, KEYS, TIMEOUT_S = 6000, 6, 60.0


def _env(root: Path, **extra: str) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(root),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "restart-strategy.type": "none",
        **extra,
    }))  # fmt: skip
    env.set_parallelism(2)
    return env


def _pipeline(env: StreamExecutionEnvironment) -> Any:
    source = DataGeneratorSource(lambda i: (i % KEYS, 1), count=RECORDS, records_per_second=3000)
    return (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "gen").uid("gen")
        .key_by(lambda t: t[0]).sum(1).uid("sum")
    )  # fmt: skip


def _completed(root: Path) -> list[Path]:
    found = []
    for job in (d for d in root.iterdir() if d.is_dir()) if root.exists() else ():
        storage = CheckpointStorage(str(root), job.name)
        found += [job / f"chk-{c}" for c in storage.completed_checkpoint_ids()]
    return found


@pytest.fixture
def legacy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, bytes]:
    """A retained checkpoint turned into what earlier undertow wrote; its pointer and key."""
    root = tmp_path / "checkpoints"
    with _pipeline(_env(root)).execute_and_collect() as records:
        deadline = time.monotonic() + TIMEOUT_S
        for _ in records:
            if _completed(root):
                break
            assert time.monotonic() < deadline, "no checkpoint completed"
    wait_until_retained(capsys)  # the cancelled job's checkpoints are final
    pointer = _completed(root)[-1]
    current = read_key()
    assert current is not None
    meta = decode_metadata((pointer / "_metadata").read_bytes(), current, str(pointer))
    old_key = secrets.token_bytes(32)
    (pointer / "_metadata").write_bytes(encode_metadata(meta, old_key, version=JSON_FORMAT_VERSION))
    (root / LEGACY_KEY_FILE).write_text(old_key.hex() + "\n")
    return pointer, old_key


def test_old_layout_is_refused_saying_how_and_restores_with_the_key(
    legacy: tuple[Path, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pointer, old_key = legacy
    key_file = pointer.parent.parent / LEGACY_KEY_FILE
    env = _env(tmp_path / "second", **{"execution.state-recovery.path": str(pointer)})
    with pytest.raises(Exception) as info:
        list(_pipeline(env).execute_and_collect())
    message = str(info.value)
    assert "authentication failed" in message and str(key_file) in message, message
    assert "-D undertow.checkpointing.hmac-key=" in message, message

    [listed] = list_checkpoints(str(pointer.parent.parent))
    assert not listed.verifies and str(key_file) in (listed.problem or "")

    env = _env(tmp_path / "third", **{
        "execution.state-recovery.path": str(pointer),
        "undertow.checkpointing.hmac-key": old_key.hex(),
    })  # fmt: skip
    capsys.readouterr()
    final: dict[int, int] = {}
    for key, count in _pipeline(env).execute_and_collect():
        final[key] = max(final.get(key, 0), count)
    assert final == {k: RECORDS // KEYS for k in range(KEYS)}
    restored = f"from checkpoint {pointer.name.removeprefix('chk-')} at {pointer}"
    assert restored in capsys.readouterr().err, "the job restored the old checkpoint"
    [listed] = list_checkpoints(str(pointer.parent.parent), key=old_key)
    assert listed.verifies, listed.problem
