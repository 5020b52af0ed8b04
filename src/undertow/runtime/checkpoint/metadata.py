"""The ``_metadata`` file: a completed checkpoint, versioned and authenticated.

Wire format (all integers big-endian)::

    offset  size  field
    0       4     magic b"UTWM"
    4       2     format version: 2 (msgpack body, :mod:`.metadata_msgpack`); 1 (JSON body,
                  :mod:`.metadata_json`, written by earlier undertow: still read, never written)
    6       4     body length N
    10      N     body
    10+N    32    HMAC-SHA256 under the metadata key of bytes [0, 10+N)

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from typing import NoReturn

from undertow.runtime.checkpoint import metadata_json, metadata_msgpack
from undertow.runtime.checkpoint.metadata_model import (
    CheckpointMetadata,
    VertexMetadata,
    referenced_channel_state_files,
    referenced_files,
    total_state_size,
)
from undertow.storage import CheckpointStorageError, CorruptCheckpointError
from undertow.storage.checkpoint_storage import MAX_METADATA_BYTES, MAX_METADATA_OPTION

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "CheckpointMetadata",
    "MetadataTooLargeError",
    "VertexMetadata",
    "decode_metadata",
    "encode_metadata",
    "referenced_channel_state_files",
    "referenced_files",
    "total_state_size",
]

MAGIC = b"UTWM"
FORMAT_VERSION = 2
#: The JSON format of earlier undertow: read, never written.
JSON_FORMAT_VERSION = 1
_HEADER = struct.Struct(">4sHI")
_MAC_SIZE = hashlib.sha256().digest_size


class MetadataTooLargeError(CheckpointStorageError):
    """The encoded ``_metadata`` of a checkpoint exceeds the size limit; the checkpoint fails."""


def encode_metadata(
    meta: CheckpointMetadata,
    key: bytes,
    max_bytes: int = MAX_METADATA_BYTES,
    *,
    version: int = FORMAT_VERSION,
) -> bytes:
    """Serialize ``meta`` and authenticate it with ``key``.

    Raises :class:`MetadataTooLargeError` naming the checkpoint, the size, the limit and the
    option that sets it when the file would exceed ``max_bytes`` (the reader's limit).
    ``version`` 1 writes the JSON body of earlier undertow (tests and tools only).
    """
    if not key:
        raise ValueError("the metadata key must not be empty")
    if version == FORMAT_VERSION:
        body = metadata_msgpack.metadata_to_bytes(meta)
    elif version == JSON_FORMAT_VERSION:
        body = metadata_json.metadata_to_bytes(meta)
    else:
        raise ValueError(f"cannot write metadata format version {version}")
    size = _HEADER.size + len(body) + _MAC_SIZE
    if size > max_bytes or len(body) > 0xFFFFFFFF:
        raise MetadataTooLargeError(
            f"checkpoint {meta.checkpoint_id} of job {meta.job_id!r} fails: its _metadata "
            f"would be {size} bytes, over the limit of {max_bytes} bytes that "
            f"{MAX_METADATA_OPTION} sets for writing and restoring; raise the option (for "
            f"writer and restore alike) or reduce the in-flight channel state (lower "
            f"parallelism, aligned checkpoints, fewer buffers per channel)"
        )
    signed = _HEADER.pack(MAGIC, version, len(body)) + body
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
    if version not in (FORMAT_VERSION, JSON_FORMAT_VERSION):
        _fail(
            where,
            f"unknown format version {version} (this build reads {JSON_FORMAT_VERSION} and "
            f"{FORMAT_VERSION})",
        )
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
            "snapshot is intact, it was signed with another key: set "
            "undertow.checkpointing.hmac-key (or undertow.checkpointing.hmac-key-file) to the "
            "key of the job that wrote it",
        )
    try:
        body = signed[_HEADER.size :]
        if version == FORMAT_VERSION:
            meta = metadata_msgpack.metadata_from_bytes(body)
        else:
            meta = metadata_json.metadata_from_bytes(body)
    except (ValueError, TypeError, KeyError, RecursionError) as err:
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


def _metadata_path(where: str) -> str:
    where = str(where).rstrip("/")
    return where if where.endswith("_metadata") else f"{where}/_metadata"


def _fail(where: str, what: str) -> NoReturn:
    path = _metadata_path(where)
    raise CorruptCheckpointError(
        f"corrupt checkpoint metadata {path}: {what}", checkpoint=where, path=path
    )
