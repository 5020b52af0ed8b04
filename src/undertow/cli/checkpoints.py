"""``undertow checkpoints DIR``: what checkpoints exist under a root, and whether each verifies.

:func:`list_checkpoints` finds them (one :class:`CheckpointInfo` each), :func:`format_table`
prints them, :func:`run` is the command. It lives in the CLI, the top layer, because it needs
both the storage layer and the metadata codec of :mod:`undertow.runtime.checkpoint.metadata`.

A checkpoint *verifies* when its ``_metadata`` authenticates under the key, describes the
checkpoint and job of the directory it is in, and every file it references has the recorded
size and sha256. Nothing is trusted before it verifies: metadata that fails authentication is
not parsed, so its completion time and size are reported as unknown.

Cost: reads every byte of every referenced file (checksums). Blocking I/O; call from a worker
thread or a command-line tool, not an event loop.
"""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TextIO

import fsspec  # type: ignore[import-untyped]

from undertow.core.units import human_bytes
from undertow.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    decode_metadata,
    referenced_files,
    total_state_size,
)
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.storage.errors import CheckpointStorageError
from undertow.storage.keys import (
    HMAC_KEY_OPTION,
    default_key_file,
    legacy_key_hint,
    parse_key,
    read_key,
)


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """One completed checkpoint directory. ``completion_time`` is epoch milliseconds.

    ``completion_time`` and ``total_size`` are ``None`` when the metadata did not
    authenticate; ``problem`` says what failed when ``verifies`` is false. ``unaligned`` and
    ``in_flight_size`` (bytes of channel state) are ``None`` also when the metadata predates
    them.
    """

    job_id: str
    checkpoint_id: int
    completion_time: int | None
    total_size: int | None
    verifies: bool
    problem: str | None
    pointer: str
    unaligned: bool | None = None
    in_flight_size: int | None = None


def list_checkpoints(
    root_uri: str,
    job_id: str | None = None,
    key: bytes | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> list[CheckpointInfo]:
    """Every completed checkpoint under ``root_uri`` (of ``job_id`` only, if given).

    ``key`` defaults to the user's key file (:func:`~undertow.storage.keys.default_key_file`,
    never created here). Sorted by job id, then
    checkpoint id. Problems with single checkpoints are reported in their entries, not raised.
    """
    options = dict(storage_options or {})
    key_problem: str | None = None
    if key is None:
        try:
            key = read_key()
        except CheckpointStorageError as err:
            key_problem = str(err)
        if key is None and key_problem is None:
            key_problem = (
                f"no key to verify with: {default_key_file()} is missing; pass --key "
                f"(as {HMAC_KEY_OPTION})"
            )
    jobs = [job_id] if job_id is not None else _job_ids(root_uri, options)
    infos = []
    for job in jobs:
        storage = CheckpointStorage(root_uri, job, storage_options=options)
        for checkpoint_id in storage.completed_checkpoint_ids():
            infos.append(_inspect(storage, checkpoint_id, key, key_problem))
    return infos


def _inspect(
    storage: CheckpointStorage, checkpoint_id: int, key: bytes | None, key_problem: str | None
) -> CheckpointInfo:
    pointer = storage.checkpoint_pointer(checkpoint_id)
    meta: CheckpointMetadata | None = None
    problem = key_problem
    if key is not None:
        try:
            meta = decode_metadata(
                storage.read_metadata(checkpoint_id),
                key,
                pointer,
                expected_checkpoint_id=checkpoint_id,
            )
            if meta.job_id != storage.job_id:
                problem = (
                    f"{pointer}: metadata describes job {meta.job_id!r}, but lies in the "
                    f"directory of job {storage.job_id!r}"
                )
            else:
                for handle in referenced_files(meta):
                    storage.read_file(handle, checkpoint_id)
        except OSError as err:  # CorruptCheckpointError, not found, I/O errors
            problem = str(err)
            hint = legacy_key_hint(storage.root_uri) if "HMAC" in problem else None
            problem = problem if hint is None else f"{problem}; {hint}"
    return CheckpointInfo(
        job_id=storage.job_id,
        checkpoint_id=checkpoint_id,
        completion_time=None if meta is None else meta.completion_timestamp,
        total_size=None if meta is None else total_state_size(meta),
        verifies=problem is None,
        problem=problem,
        pointer=pointer,
        unaligned=None if meta is None else _unaligned(meta.properties),
        in_flight_size=None if meta is None else _in_flight(meta.properties),
    )


def _unaligned(properties: Mapping[str, str]) -> bool | None:
    value = properties.get("unaligned")
    return None if value is None else value == "true"


def _in_flight(properties: Mapping[str, str]) -> int | None:
    value = properties.get("persisted_data")
    return int(value) if value is not None and value.isdigit() else None


def _job_ids(root_uri: str, options: Mapping[str, Any]) -> list[str]:
    fs, root = fsspec.core.url_to_fs(root_uri, **options)
    fs.invalidate_cache(root)
    try:
        entries = fs.ls(root, detail=True)
    except FileNotFoundError:
        return []
    names = [
        posixpath.basename(str(entry["name"]).rstrip("/"))
        for entry in entries
        if entry.get("type") == "directory"
    ]
    return sorted(name for name in names if name and name[0] not in "_.")


# -- the command ---------------------------------------------------------------------------
_COLUMNS = ("JOB ID", "CHECKPOINT", "COMPLETED", "SIZE", "TYPE", "IN-FLIGHT", "VERIFIES",
            "PROBLEM")  # fmt: skip


def format_table(infos: Sequence[CheckpointInfo]) -> str:
    """One row per checkpoint: job id, checkpoint id, completion time (ISO 8601, UTC), size
    (human readable), type (aligned or unaligned), in-flight data persisted (channel state),
    whether it verifies and, if not, the first line of the problem."""
    rows = [_COLUMNS]
    for info in infos:
        completed = "-"
        if info.completion_time is not None:
            moment = datetime.fromtimestamp(info.completion_time / 1000, tz=timezone.utc)
            completed = moment.isoformat(timespec="seconds")
        size = "-" if info.total_size is None else human_bytes(info.total_size)
        problem = (info.problem or "").splitlines()[0] if info.problem else ""
        kind = "-" if info.unaligned is None else ("unaligned" if info.unaligned else "aligned")
        in_flight = "-" if info.in_flight_size is None else human_bytes(info.in_flight_size)
        rows.append((info.job_id, str(info.checkpoint_id), completed, size, kind, in_flight,
                     "yes" if info.verifies else "no", problem))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def run(
    root_uri: str, job_id: str | None = None, key: str | None = None, out: TextIO | None = None
) -> int:
    """List and verify; exit code 0 when every checkpoint verifies (or there is none), else 1.

    ``key`` is an ``undertow.checkpointing.hmac-key`` value (hex or text); without it the
    user's key file is used.
    """
    out = out if out is not None else sys.stdout
    infos = list_checkpoints(root_uri, job_id, None if key is None else parse_key(key))
    if not infos:
        where = root_uri if job_id is None else f"{root_uri} for job {job_id}"
        out.write(f"no completed checkpoints under {where}\n")
        return 0
    out.write(format_table(infos) + "\n")
    bad = sum(1 for info in infos if not info.verifies)
    if bad:
        out.write(f"{bad} of {len(infos)} checkpoints do not verify\n")
    return 1 if bad else 0
