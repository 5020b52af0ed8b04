"""The JSON body of ``_metadata`` format version 1, as undertow wrote it before version 2.

Version 1 checkpoints are still read (:func:`metadata_from_bytes`), so a job can be upgraded
from a retained checkpoint or savepoint: the body is JSON with sorted keys, channel-state
handles in the form of :func:`~.channel_state_handles.handle_to_json`. It is parsed only after
the envelope authenticated (:mod:`.metadata`). :func:`metadata_to_bytes` writes it, for tests
and tools that must produce what an earlier undertow wrote; the runtime never writes it.

Errors: :class:`ValueError`, :class:`TypeError` or :class:`KeyError` naming the field; the
caller turns them into a ``CorruptCheckpointError``. Pure functions, any thread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NoReturn

from undertow.runtime.checkpoint.channel_state_handles import handles_from_json, handles_to_json
from undertow.runtime.checkpoint.metadata_fields import bool_field, int_field, string_field
from undertow.runtime.checkpoint.metadata_model import CheckpointMetadata, VertexMetadata
from undertow.storage import FileHandle

_INT_KEY = re.compile(r"-?(0|[1-9][0-9]*)")


def metadata_to_bytes(meta: CheckpointMetadata) -> bytes:
    """The version 1 body of ``meta`` (ASCII JSON, sorted keys)."""
    return json.dumps(
        _metadata_to_json(meta),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    ).encode("ascii")


def metadata_from_bytes(body: bytes) -> CheckpointMetadata:
    """Parse an authenticated version 1 body."""
    return _metadata_from_json(json.loads(body.decode("ascii"), parse_constant=_reject_constant))


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
            str(int_field(index, "subtask index")): _handle_to_json(handle)
            for index, handle in vertex.subtasks.items()
        },
    }
    if vertex.channel_state:  # absent when empty: such metadata encodes as before
        document["channel_state"] = {
            str(int_field(index, "channel-state subtask index")): handles_to_json(handles)
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
            str(int_field(vertex_id, "coordinator vertex id")): (
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
        key: string_field(value, f"property {key!r}")
        for key, value in _object(top["properties"], "properties").items()
    }
    return CheckpointMetadata(
        job_id=string_field(top["job_id"], "job_id"),
        checkpoint_id=int_field(top["checkpoint_id"], "checkpoint_id"),
        trigger_timestamp=int_field(top["trigger_timestamp"], "trigger_timestamp"),
        completion_timestamp=int_field(top["completion_timestamp"], "completion_timestamp"),
        is_savepoint=bool_field(top["is_savepoint"], "is_savepoint"),
        vertices=tuple(_vertex_from_json(v) for v in _list(top["vertices"], "vertices")),
        coordinators=coordinators,
        properties=properties,
    )


def _vertex_from_json(document: object) -> VertexMetadata:
    vertex = _object(document, "vertex")
    return VertexMetadata(
        vertex_id=int_field(vertex["vertex_id"], "vertex_id"),
        name=string_field(vertex["name"], "vertex name"),
        uids=tuple(string_field(uid, "uid") for uid in _list(vertex["uids"], "uids")),
        parallelism=int_field(vertex["parallelism"], "parallelism"),
        max_parallelism=int_field(vertex["max_parallelism"], "max_parallelism"),
        finished=bool_field(vertex["finished"], "finished"),
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
        path=string_field(handle["path"], "file path"),
        size=int_field(handle["size"], "file size"),
        sha256=string_field(handle["sha256"], "sha256"),
    )


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"{what} must be a JSON array, got {type(value).__name__}")
    return value


def _int_key(key: str, what: str) -> int:
    if not _INT_KEY.fullmatch(key):
        raise ValueError(f"{what} must be a decimal integer, got {key!r}")
    return int(key)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"non-finite number {name} in metadata")
