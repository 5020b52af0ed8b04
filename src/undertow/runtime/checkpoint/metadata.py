"""The ``_metadata`` file: what a completed checkpoint consists of, versioned and authenticated.

Wire format (all integers big-endian)::

    offset  size  field
    0       4     magic b"UTWM"
    4       2     format version (1)
    6       4     body length N
    10      N     body: UTF-8 JSON (ASCII only), keys sorted
    10+N    32    HMAC-SHA256 under the checkpoint key of bytes [0, 10+N)

Rationale: state files hold pickled bytes, so whoever can write a ``_metadata`` that the restore
trusts can run code in the job. :func:`decode_metadata` therefore checks, in this order, the
magic, the version, the length and the HMAC (``hmac.compare_digest``) *before* it parses any
JSON, and the body names every state file with its size and sha256, which
:meth:`~undertow.storage.CheckpointStorage.read_file` verifies before returning a byte. There
is no pickle anywhere in the metadata. Any failure is a
:class:`~undertow.storage.CorruptCheckpointError` naming the checkpoint location and what failed.

A new format gets a new version number; decoders reject versions they do not know.

Cost: encoding and decoding are linear in the number of handles; pure functions, callable from
any thread.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateHandles,
    handles_from_json,
    handles_to_json,
)
from undertow.storage import CorruptCheckpointError, FileHandle

MAGIC = b"UTWM"
FORMAT_VERSION = 1
_HEADER = struct.Struct(">4sHI")
_MAC_SIZE = hashlib.sha256().digest_size
_INT_KEY = re.compile(r"-?(0|[1-9][0-9]*)")


@dataclass(frozen=True, slots=True)
class VertexMetadata:
    """One job vertex (an operator chain) in a checkpoint.

    ``uids`` are the chained operators' uids in chain order; ``subtasks`` maps a subtask index
    to the handle of its state file. A ``finished`` vertex (FLIP-147) has no subtask state and
    is restored as finished. ``channel_state`` maps a subtask index to its unaligned channel
    state (merged handles, one per side; files may be shared with other subtasks); it is
    written only when non-empty, and metadata without it decodes with it empty.
    """

    vertex_id: int
    name: str
    uids: tuple[str, ...]
    parallelism: int
    max_parallelism: int
    finished: bool = False
    subtasks: dict[int, FileHandle] = field(default_factory=dict)
    channel_state: dict[int, ChannelStateHandles] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    """Everything needed to restore a job from one checkpoint.

    Timestamps are epoch milliseconds. ``coordinators`` maps a vertex id to the handle of its
    coordinator state (``None``: the coordinator had nothing to store). ``properties`` carries
    small string facts (checkpoint type, claim mode, ...).
    """

    job_id: str
    checkpoint_id: int
    trigger_timestamp: int
    completion_timestamp: int
    is_savepoint: bool
    vertices: tuple[VertexMetadata, ...]
    coordinators: dict[int, FileHandle | None] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)


def encode_metadata(meta: CheckpointMetadata, key: bytes) -> bytes:
    """Serialize ``meta`` and authenticate it with ``key``."""
    if not key:
        raise ValueError("the metadata key must not be empty")
    body = json.dumps(
        _metadata_to_json(meta),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    ).encode("ascii")
    if len(body) > 0xFFFFFFFF:
        raise ValueError(f"metadata body of {len(body)} bytes does not fit the format")
    signed = _HEADER.pack(MAGIC, FORMAT_VERSION, len(body)) + body
    return signed + hmac.new(key, signed, hashlib.sha256).digest()


def decode_metadata(
    data: bytes,
    key: bytes,
    where: str,
    *,
    expected_checkpoint_id: int | None = None,
) -> CheckpointMetadata:
    """Verify and parse a ``_metadata`` file read from ``where`` (the checkpoint location).

    Checks magic, version, length and HMAC before parsing; then the body's structure, and that
    it describes ``expected_checkpoint_id`` if one is given (a ``_metadata`` copied into
    another checkpoint's directory would otherwise verify). Raises
    :class:`~undertow.storage.CorruptCheckpointError` naming ``where`` and what failed.
    """
    data = bytes(data)
    if len(data) < len(MAGIC):
        _fail(where, f"truncated: {len(data)} bytes, shorter than the header")
    if data[: len(MAGIC)] != MAGIC:
        _fail(where, f"bad magic {data[: len(MAGIC)]!r}, expected {MAGIC!r}")
    if len(data) < _HEADER.size:
        _fail(where, f"truncated: {len(data)} bytes, shorter than the {_HEADER.size}-byte header")
    _, version, body_length = _HEADER.unpack_from(data)
    if version != FORMAT_VERSION:
        _fail(where, f"unknown format version {version} (this build reads {FORMAT_VERSION})")
    expected_length = _HEADER.size + body_length + _MAC_SIZE
    if len(data) < expected_length:
        _fail(where, f"truncated: {len(data)} bytes, the header announces {expected_length}")
    if len(data) > expected_length:
        _fail(
            where,
            f"{len(data) - expected_length} unexpected trailing bytes "
            f"({len(data)} bytes, the header announces {expected_length})",
        )
    signed, mac = data[:-_MAC_SIZE], data[-_MAC_SIZE:]
    if not hmac.compare_digest(mac, hmac.new(key, signed, hashlib.sha256).digest()):
        _fail(
            where,
            "authentication failed: wrong key or tampered content (HMAC mismatch); if the "
            "snapshot is intact, it was signed with another key: restore with the "
            "execution.checkpointing.dir it was written under (its key file is there) or set "
            "undertow.checkpointing.hmac-key to that key",
        )
    try:
        document = json.loads(
            signed[_HEADER.size :].decode("ascii"), parse_constant=_reject_constant
        )
        meta = _metadata_from_json(document)
    except (ValueError, TypeError, KeyError) as err:
        problem = f"missing field {err}" if isinstance(err, KeyError) else str(err)
        raise CorruptCheckpointError(
            f"corrupt checkpoint metadata {_metadata_path(where)}: authenticated but malformed "
            f"body: {problem}",
            checkpoint=where,
            path=_metadata_path(where),
        ) from err
    if expected_checkpoint_id is not None and meta.checkpoint_id != expected_checkpoint_id:
        _fail(
            where,
            f"describes checkpoint {meta.checkpoint_id}, expected {expected_checkpoint_id}",
        )
    return meta


def referenced_files(meta: CheckpointMetadata) -> list[FileHandle]:
    """Every distinct file the checkpoint references (subtask, channel and coordinator
    state); a channel-state file shared by several subtasks is listed once."""
    seen: dict[str, FileHandle] = {}
    for vertex in meta.vertices:
        for handle in vertex.subtasks.values():
            seen.setdefault(handle.path, handle)
        for channel_state in vertex.channel_state.values():
            for handle in channel_state.files():
                seen.setdefault(handle.path, handle)
    for maybe in meta.coordinators.values():
        if maybe is not None:
            seen.setdefault(maybe.path, maybe)
    return list(seen.values())


def total_state_size(meta: CheckpointMetadata) -> int:
    """Bytes of state the checkpoint references, each distinct file counted once, plus the
    channel state carried inline in the metadata."""
    inline = sum(
        handles.inline_bytes
        for vertex in meta.vertices
        for handles in vertex.channel_state.values()
    )
    return sum(handle.size for handle in referenced_files(meta)) + inline


# -- JSON mapping ----------------------------------------------------------------------------


def _handle_to_json(handle: FileHandle) -> dict[str, Any]:
    return {"path": handle.path, "size": handle.size, "sha256": handle.sha256}


def _vertex_to_json(vertex: VertexMetadata) -> dict[str, Any]:
    document = {
        "vertex_id": vertex.vertex_id,
        "name": vertex.name,
        "uids": list(vertex.uids),
        "parallelism": vertex.parallelism,
        "max_parallelism": vertex.max_parallelism,
        "finished": vertex.finished,
        "subtasks": {
            str(_int(index, "subtask index")): _handle_to_json(handle)
            for index, handle in vertex.subtasks.items()
        },
    }
    if vertex.channel_state:  # absent when empty: such metadata encodes as before
        document["channel_state"] = {
            str(_int(index, "channel-state subtask index")): handles_to_json(handles)
            for index, handles in vertex.channel_state.items()
        }
    return document


def _metadata_to_json(meta: CheckpointMetadata) -> dict[str, Any]:
    return {
        "job_id": meta.job_id,
        "checkpoint_id": meta.checkpoint_id,
        "trigger_timestamp": meta.trigger_timestamp,
        "completion_timestamp": meta.completion_timestamp,
        "is_savepoint": meta.is_savepoint,
        "vertices": [_vertex_to_json(vertex) for vertex in meta.vertices],
        "coordinators": {
            str(_int(vertex_id, "coordinator vertex id")): (
                None if handle is None else _handle_to_json(handle)
            )
            for vertex_id, handle in meta.coordinators.items()
        },
        "properties": {str(k): str(v) for k, v in meta.properties.items()},
    }


def _metadata_from_json(document: object) -> CheckpointMetadata:
    top = _object(document, "metadata")
    coordinators: dict[int, FileHandle | None] = {}
    for key, value in _object(top["coordinators"], "coordinators").items():
        coordinators[_int_key(key, "coordinator vertex id")] = (
            None if value is None else _handle_from_json(value)
        )
    properties = {
        key: _str(value, f"property {key!r}")
        for key, value in _object(top["properties"], "properties").items()
    }
    return CheckpointMetadata(
        job_id=_str(top["job_id"], "job_id"),
        checkpoint_id=_int(top["checkpoint_id"], "checkpoint_id"),
        trigger_timestamp=_int(top["trigger_timestamp"], "trigger_timestamp"),
        completion_timestamp=_int(top["completion_timestamp"], "completion_timestamp"),
        is_savepoint=_bool(top["is_savepoint"], "is_savepoint"),
        vertices=tuple(_vertex_from_json(v) for v in _list(top["vertices"], "vertices")),
        coordinators=coordinators,
        properties=properties,
    )


def _vertex_from_json(document: object) -> VertexMetadata:
    vertex = _object(document, "vertex")
    return VertexMetadata(
        vertex_id=_int(vertex["vertex_id"], "vertex_id"),
        name=_str(vertex["name"], "vertex name"),
        uids=tuple(_str(uid, "uid") for uid in _list(vertex["uids"], "uids")),
        parallelism=_int(vertex["parallelism"], "parallelism"),
        max_parallelism=_int(vertex["max_parallelism"], "max_parallelism"),
        finished=_bool(vertex["finished"], "finished"),
        subtasks={
            _int_key(key, "subtask index"): _handle_from_json(value)
            for key, value in _object(vertex["subtasks"], "subtasks").items()
        },
        channel_state={
            _int_key(key, "channel-state subtask index"): handles_from_json(value)
            for key, value in _object(vertex.get("channel_state", {}), "channel_state").items()
        },
    )


def _handle_from_json(document: object) -> FileHandle:
    handle = _object(document, "file handle")
    return FileHandle(
        path=_str(handle["path"], "file path"),
        size=_int(handle["size"], "file size"),
        sha256=_str(handle["sha256"], "sha256"),
    )


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"{what} must be a JSON array, got {type(value).__name__}")
    return value


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {value!r}")
    return value


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return value


def _bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a boolean, got {value!r}")
    return value


def _int_key(key: str, what: str) -> int:
    if not _INT_KEY.fullmatch(key):
        raise ValueError(f"{what} must be a decimal integer, got {key!r}")
    return int(key)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"non-finite number {name} in metadata")


def _metadata_path(where: str) -> str:
    where = str(where).rstrip("/")
    return where if where.endswith("_metadata") else f"{where}/_metadata"


def _fail(where: str, what: str) -> NoReturn:
    path = _metadata_path(where)
    raise CorruptCheckpointError(
        f"corrupt checkpoint metadata {path}: {what}", checkpoint=where, path=path
    )
