"""The msgpack body of ``_metadata`` format version 2: every file path stored once. Layout
(msgpack; ``sha`` = 32 raw bytes of a sha256)::

    {"job": str, "id": int, "trigger": int, "completion": int, "savepoint": bool,
     "files": [[path, size, sha], ...],          # the path dictionary: each file once
     "vertices": [[vertex_id, name, [uid...], parallelism, max_parallelism, finished,
                   {subtask: file#}, {subtask: [input | nil, output | nil]}], ...],
     "coordinators": {vertex_id: file# | nil}, "properties": {str: str},
     "shared": [file#, ...]}                     # only when non-empty (incremental)

    channel-state handle: [subtask, checkpoint_id, file# | nil, inline bytes | nil, range_start,
                           range_length, range sha, packed channels | nil, references?]
    reference: [a, b, position, file#, region_start, region_length, region sha, start, [len...]]
The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from typing import Any

import msgpack  # type: ignore[import-untyped]

from undertow.runtime.checkpoint import channel_columns
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateDirection,
    ChannelStateHandles,
    ChannelStateReference,
    MergedChannelStateHandle,
)
from undertow.runtime.checkpoint.metadata_fields import bool_field, int_field, string_field
from undertow.runtime.checkpoint.metadata_model import CheckpointMetadata, VertexMetadata
from undertow.storage import FileHandle

_TOP_KEYS = frozenset(
    {"job", "id", "trigger", "completion", "savepoint", "files", "vertices", "coordinators",
     "properties"}
)  # fmt: skip


class _Files:
    """The path dictionary being built: a file's index, assigned on first use."""

    def __init__(self) -> None:
        self.index: dict[FileHandle, int] = {}

    def of(self, handle: FileHandle) -> int:
        found = self.index.get(handle)
        if found is None:
            found = self.index[handle] = len(self.index)
        return found

    def table(self) -> list[list[Any]]:
        return [[h.path, h.size, bytes.fromhex(h.sha256)] for h in self.index]


def metadata_to_bytes(meta: CheckpointMetadata) -> bytes:
    """The version 2 body of ``meta``."""
    files = _Files()
    vertices = [
        [
            v.vertex_id, v.name, list(v.uids), v.parallelism, v.max_parallelism, v.finished,
            {int_field(s, "subtask index"): files.of(h) for s, h in v.subtasks.items()},
            {
                int_field(s, "channel-state subtask index"): [
                    None if hs.input is None else _handle_out(hs.input, files),
                    None if hs.output is None else _handle_out(hs.output, files),
                ]
                for s, hs in v.channel_state.items()
            },
        ]
        for v in meta.vertices
    ]  # fmt: skip
    coordinators = {
        int_field(vid, "coordinator vertex id"): None if h is None else files.of(h)
        for vid, h in meta.coordinators.items()
    }
    document = {
        "job": meta.job_id, "id": meta.checkpoint_id, "trigger": meta.trigger_timestamp,
        "completion": meta.completion_timestamp, "savepoint": meta.is_savepoint,
        "files": files.table(), "vertices": vertices, "coordinators": coordinators,
        "properties": {str(k): str(v) for k, v in meta.properties.items()},
    }  # fmt: skip
    if meta.shared_files:
        document["shared"] = [files.of(h) for h in meta.shared_files]
        document["files"] = files.table()
    return bytes(msgpack.packb(document, use_bin_type=True))


def metadata_from_bytes(body: bytes) -> CheckpointMetadata:
    """Parse an authenticated version 2 body."""
    try:
        document = msgpack.unpackb(body, raw=False, strict_map_key=False, use_list=True)
    except (msgpack.UnpackException, msgpack.ExtraData, UnicodeDecodeError) as err:
        raise ValueError(f"not a msgpack document: {err}") from err
    top = _map(document, "metadata")
    if set(top) - {"shared"} != _TOP_KEYS:
        found = sorted(map(str, top))
        raise ValueError(f"metadata fields must be {sorted(_TOP_KEYS)}, got {found}")
    files = [_file(entry, i) for i, entry in enumerate(_list(top["files"], "files"))]

    def file(index: object, what: str) -> FileHandle:
        i = int_field(index, what)
        if not 0 <= i < len(files):
            raise ValueError(f"{what}: file #{i} is not in the file table of {len(files)}")
        return files[i]

    vertices = tuple(_vertex(v, file) for v in _list(top["vertices"], "vertices"))
    coordinators = {
        int_field(vid, "coordinator vertex id"): None if h is None else file(h, "coordinator state")
        for vid, h in _map(top["coordinators"], "coordinators").items()
    }
    return CheckpointMetadata(
        job_id=string_field(top["job"], "job"),
        checkpoint_id=int_field(top["id"], "id"),
        trigger_timestamp=int_field(top["trigger"], "trigger"),
        completion_timestamp=int_field(top["completion"], "completion"),
        is_savepoint=bool_field(top["savepoint"], "savepoint"),
        vertices=vertices,
        coordinators=coordinators,
        properties={
            string_field(k, "property name"): string_field(v, f"property {k!r}")
            for k, v in _map(top["properties"], "properties").items()
        },
        shared_files=tuple(file(h, "shared file") for h in _list(top.get("shared", []), "shared")),
    )


def _handle_out(handle: MergedChannelStateHandle, files: _Files) -> list[Any]:
    return [
        handle.subtask, handle.checkpoint_id,
        None if handle.file is None else files.of(handle.file), handle.inline_data,
        handle.range_start, handle.range_length, bytes.fromhex(handle.range_sha256),
        # nil: nothing written (a handle of references only)
        channel_columns.pack(handle.packed_channels) if handle.packed_channels else None,
    ] + ([[
        [*r.channel, r.position, files.of(r.file), r.region_start, r.region_length,
         bytes.fromhex(r.region_sha256), r.start, list(r.lengths)]
        for r in handle.references
    ]] if handle.references else [])  # fmt: skip


def _vertex(document: object, file: Any) -> VertexMetadata:
    fields = _list(document, "vertex")
    if len(fields) != 8:
        raise ValueError(f"vertex must have 8 fields, got {len(fields)}")
    vid, name, uids, parallelism, max_parallelism, finished, subtasks, channels = fields
    vertex_id = int_field(vid, "vertex_id")
    where = f"vertex {vertex_id}"
    channel_state = {}
    for s, sides in _map(channels, f"{where} channel_state").items():
        pair = _list(sides, f"{where} subtask {s!r} channel state")
        if len(pair) != 2:
            raise ValueError(f"{where} subtask {s!r} channel state must be [input, output]")
        channel_state[int_field(s, f"{where} channel-state subtask index")] = ChannelStateHandles(
            *(
                None if raw is None else _handle_in(raw, direction, file)
                for raw, direction in zip(pair, ChannelStateDirection, strict=True)
            )
        )
    return VertexMetadata(
        vertex_id=vertex_id,
        name=string_field(name, f"{where} name"),
        uids=tuple(string_field(uid, f"{where} uid") for uid in _list(uids, f"{where} uids")),
        parallelism=int_field(parallelism, f"{where} parallelism"),
        max_parallelism=int_field(max_parallelism, f"{where} max_parallelism"),
        finished=bool_field(finished, f"{where} finished"),
        subtasks={
            int_field(s, f"{where} subtask index"): file(h, f"{where} subtask {s!r}")
            for s, h in _map(subtasks, f"{where} subtasks").items()
        },
        channel_state=channel_state,
    )


def _handle_in(
    document: object, direction: ChannelStateDirection, file: Any
) -> MergedChannelStateHandle:
    fields = _list(document, "channel-state handle")
    if len(fields) not in (8, 9):
        raise ValueError(f"channel-state handle must have 8 or 9 fields, got {len(fields)}")
    subtask, checkpoint_id, file_index, inline, start, length, sha, packed = fields[:8]
    where = f"channel-state handle of subtask {subtask!r}, checkpoint {checkpoint_id!r}"
    references = []
    for raw in _list(fields[8], f"{where} references") if len(fields) == 9 else []:
        ref = _list(raw, f"{where} reference")
        if len(ref) != 9 or not isinstance(ref[8], list):
            raise ValueError(f"{where}: a reference must have 9 fields, got {ref!r:.120}")
        a, b, position, ref_file, region_start, region_length, region_sha, run_start = ref[:8]
        try:
            references.append(ChannelStateReference(
                (int_field(a, f"{where} reference channel"), int_field(b, f"{where} channel")),
                int_field(position, f"{where} position"), file(ref_file, where),
                int_field(region_start, f"{where} region start"),
                int_field(region_length, f"{where} region length"),
                _sha(region_sha, where), int_field(run_start, f"{where} run start"),
                tuple(int_field(n, f"{where} chunk length") for n in ref[8]),
            ))  # fmt: skip
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: bad reference: {err}") from err
    if inline is not None and not isinstance(inline, bytes):
        raise TypeError(f"{where}: inline data must be bytes, got {type(inline).__name__}")
    try:
        packed_channels = b"" if packed is None else channel_columns.unpack(packed)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from err
    return MergedChannelStateHandle(
        subtask=string_field(subtask, "channel-state subtask"),
        checkpoint_id=int_field(checkpoint_id, f"{where}: checkpoint"),
        direction=direction,
        file=None if file_index is None else file(file_index, where),
        inline_data=inline,
        range_start=int_field(start, f"{where}: range_start"),
        range_length=int_field(length, f"{where}: range_length"),
        range_sha256=_sha(sha, where),
        packed_channels=packed_channels,
        references=tuple(references),
    )


def _file(entry: object, index: int) -> FileHandle:
    fields = _list(entry, f"file #{index}")
    if len(fields) != 3:
        raise ValueError(f"file #{index} must be [path, size, sha256], got {len(fields)} fields")
    path, size, sha = fields
    where = f"file #{index}"
    return FileHandle(
        string_field(path, f"{where} path"), int_field(size, f"{where} size"), _sha(sha, where)
    )


def _sha(value: object, what: str) -> str:
    if not isinstance(value, bytes) or len(value) != 32:
        raise ValueError(f"{what}: sha256 must be 32 bytes, got {value!r:.80}")
    return value.hex()


def _map(value: object, what: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{what} must be a map, got {type(value).__name__}")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"{what} must be an array, got {type(value).__name__}")
    return value
