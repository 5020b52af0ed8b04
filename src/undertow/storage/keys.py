"""The key that authenticates checkpoint metadata (HMAC-SHA256).

Checkpoint state is pickled, so a forged ``_metadata`` pointing at a forged state file would
run an attacker's code on restore. ``_metadata`` therefore carries an HMAC, and the key comes
from, in this order:

1. the option ``undertow.checkpointing.hmac-key`` (:data:`HMAC_KEY_OPTION`): hex if it is an
   even number (at least 32) of hex digits, otherwise the UTF-8 bytes of the text; use at
   least 32 random bytes;
2. the key file ``<root>/_undertow_key`` (:data:`KEY_FILE`), shared by every job under the
   root, so a restarted job and ``undertow checkpoints`` can verify what an earlier run wrote;
3. a new random 32-byte key written to that file (mode 0600 on the local file system).

:class:`CheckpointKey` defers all of that to the first use: a job that never takes a checkpoint
or savepoint, and restores none, creates neither the key file nor the root directory.

The key file holds the key as hex and a newline. Creation is atomic on the local file system
(written under a temporary name, then hard-linked into place, which fails if another process
won the race; everyone then uses the winner's key). On object stores it is a put followed by
a read-back; two processes creating the key in the same instant could briefly disagree,
after which every reader sees one key.

Threading: blocking I/O; call from a worker thread, not an event loop.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import secrets
import threading
import uuid
from collections.abc import Mapping
from typing import Any

import fsspec  # type: ignore[import-untyped]
from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

from undertow.core.errors import ConfigurationError
from undertow.storage.errors import CheckpointStorageError

HMAC_KEY_OPTION = "undertow.checkpointing.hmac-key"
KEY_FILE = "_undertow_key"
KEY_BYTES = 32

_HEX_KEY = re.compile(r"(?:[0-9a-fA-F]{2}){16,}")


def parse_key(configured: str) -> bytes:
    """The key bytes of a configured ``undertow.checkpointing.hmac-key`` value."""
    text = configured.strip()
    if not text:
        raise ConfigurationError(f"{HMAC_KEY_OPTION} is set but empty")
    if _HEX_KEY.fullmatch(text):
        return bytes.fromhex(text)
    return text.encode("utf-8")


def read_key(
    root_uri: str,
    configured: str | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> bytes | None:
    """The configured key, else the key in ``<root>/_undertow_key``, else ``None``.

    Never creates a key: this is what read-only tools (``undertow checkpoints``) use.
    """
    if configured is not None:
        return parse_key(configured)
    fs, root = fsspec.core.url_to_fs(root_uri, **dict(storage_options or {}))
    return _read_key_file(fs, posixpath.join(str(root).rstrip("/") or "/", KEY_FILE))


def load_or_create_key(
    root_uri: str,
    configured: str | None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> bytes:
    """The configured key, else the key file under ``root_uri``, created if it is missing."""
    if configured is not None:
        return parse_key(configured)
    fs, root = fsspec.core.url_to_fs(root_uri, **dict(storage_options or {}))
    root = str(root).rstrip("/") or "/"
    path = posixpath.join(root, KEY_FILE)
    existing = _read_key_file(fs, path)
    if existing is not None:
        return existing
    content = (secrets.token_bytes(KEY_BYTES).hex() + "\n").encode("ascii")
    if isinstance(fs, LocalFileSystem):
        _create_local(root, path, content)
    else:
        fs.pipe_file(path, content)
        fs.invalidate_cache(root)
    key = _read_key_file(fs, path)
    if key is None:
        raise CheckpointStorageError(f"key file {path} vanished right after it was created")
    return key


class CheckpointKey:
    """The metadata key of one checkpoint root, read or created on first use.

    Construction does no I/O. :meth:`load` returns the key, the first successful call through
    :func:`load_or_create_key` (which may create ``<root>/_undertow_key`` and the root
    directory), later calls from memory. A failed load is not remembered: the next call tries
    again.

    Threading: :meth:`load` may block on I/O the first time (call it from a worker thread, not
    an event loop, unless :attr:`is_loaded`); any thread may call it, a lock makes concurrent
    first calls load once. :attr:`is_loaded` never blocks.

    Invariant: once loaded, the key never changes for the life of the object.
    """

    def __init__(
        self,
        root_uri: str,
        configured: str | None,
        *,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.root_uri = root_uri
        self._configured = configured
        self._options = dict(storage_options or {})
        self._lock = threading.Lock()
        self._key: bytes | None = None

    @classmethod
    def of(cls, key: bytes) -> CheckpointKey:
        """A key known already (tests, tools): :meth:`load` does no I/O."""
        known = cls("", None)
        known._key = key
        return known

    @property
    def is_loaded(self) -> bool:
        """:meth:`load` has succeeded: it returns at once, without I/O."""
        return self._key is not None

    def load(self) -> bytes:
        """The key; the first call reads or creates it (blocking I/O; raises
        :class:`CheckpointStorageError` or :class:`ConfigurationError` as
        :func:`load_or_create_key` does)."""
        key = self._key
        if key is not None:
            return key
        with self._lock:
            if self._key is None:
                self._key = load_or_create_key(
                    self.root_uri, self._configured, storage_options=self._options
                )
            return self._key

    def __repr__(self) -> str:  # never the key itself
        state = "loaded" if self.is_loaded else "not loaded"
        return f"CheckpointKey({self.root_uri!r}, {state})"


def _read_key_file(fs: Any, path: str) -> bytes | None:
    try:
        with fs.open(path, "rb") as stream:
            raw = stream.read(4096)
    except FileNotFoundError:
        return None
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError) as err:
        raise CheckpointStorageError(
            f"key file {path} does not hold a hex key; restore it from a backup, or set "
            f"{HMAC_KEY_OPTION} (checkpoints written with another key will not verify)"
        ) from err
    if not key:
        raise CheckpointStorageError(f"key file {path} is empty")
    return key


def _create_local(root: str, path: str, content: bytes) -> None:
    """Create ``path`` with ``content`` and mode 0600 unless it exists; atomic."""
    os.makedirs(root, exist_ok=True)
    temp = f"{path}.{uuid.uuid4().hex}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # another process created it first; its key wins
        except OSError:
            # No hard links on this file system: exclusive create, then write.
            with contextlib.suppress(FileExistsError):
                final = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(final, "wb") as out:
                    out.write(content)
                    out.flush()
                    os.fsync(out.fileno())
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    if os.name == "posix":
        dir_fd = os.open(root, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
