"""The key that authenticates checkpoint metadata (HMAC-SHA256), kept outside the checkpoints.

Checkpoint state is pickled, so a forged ``_metadata`` pointing at a forged state file would
run an attacker's code on restore. ``_metadata`` therefore carries an HMAC, and the key must
not be writable by whoever can write the checkpoint directory. It comes from, in this order:

1. the option ``undertow.checkpointing.hmac-key`` (:data:`HMAC_KEY_OPTION`): hex if it is an
   even number (at least 32) of hex digits, otherwise the UTF-8 bytes of the text;
2. the local key file ``undertow.checkpointing.hmac-key-file`` (:data:`HMAC_KEY_FILE_OPTION`),
   by default ``$XDG_CONFIG_HOME/undertow/checkpoint.key`` (``~/.config/...`` without
   ``XDG_CONFIG_HOME``): 32 random bytes as hex, created mode 0600 (directory 0700) when
   missing, atomically (temporary file hard-linked into place: the first creator wins).
   A key file or directory that group or others may write is refused.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import secrets
import stat
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fsspec  # type: ignore[import-untyped]

from undertow.core.config import Configuration, Options
from undertow.core.errors import ConfigurationError
from undertow.storage.errors import CheckpointStorageError

HMAC_KEY_OPTION = Options.HMAC_KEY.key
HMAC_KEY_FILE_OPTION = Options.HMAC_KEY_FILE.key
#: Where earlier undertow kept the key: inside the checkpoint root (no longer trusted).
LEGACY_KEY_FILE = "_undertow_key"
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


def default_key_file() -> Path:
    """``$XDG_CONFIG_HOME/undertow/checkpoint.key``, else ``~/.config/undertow/checkpoint.key``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "undertow" / "checkpoint.key"


def key_file_of(config: Configuration) -> Path:
    """The key file ``config`` names, or :func:`default_key_file`."""
    configured = config.get(Options.HMAC_KEY_FILE).strip()
    return Path(os.path.expanduser(configured)) if configured else default_key_file()


def read_key(*, configured: str | None = None, key_file: Path | str | None = None) -> bytes | None:
    """The configured key, else the key file's key, else ``None`` (no file).

    Keyword-only: earlier undertow took the checkpoint root first, and a root passed where
    the configured key goes would silently become the key.

    Never creates a key: this is what read-only tools (``undertow checkpoints``) use. Raises
    :class:`CheckpointStorageError` for a key file that is unsafe or does not hold a key.
    """
    if configured is not None:
        return parse_key(configured)
    return _read_key_file(Path(key_file) if key_file is not None else default_key_file())


def load_or_create_key(
    *, configured: str | None = None, key_file: Path | str | None = None
) -> bytes:
    """The configured key, else the key file's key; the file is created if it is missing
    (keyword-only, as :func:`read_key`)."""
    if configured is not None:
        return parse_key(configured)
    path = Path(key_file) if key_file is not None else default_key_file()
    existing = _read_key_file(path)
    if existing is not None:
        return existing
    _create_key_file(path, (secrets.token_bytes(KEY_BYTES).hex() + "\n").encode("ascii"))
    key = _read_key_file(path)
    if key is None:
        raise CheckpointStorageError(f"key file {path} vanished right after it was created")
    return key


def legacy_key_hint(root_uri: str, storage_options: Mapping[str, Any] | None = None) -> str | None:
    """What to tell the user when metadata under ``root_uri`` does not authenticate and the
    root still holds an earlier undertow's ``_undertow_key``; ``None`` if it does not."""
    try:
        fs, root = fsspec.core.url_to_fs(root_uri, **dict(storage_options or {}))
        legacy = posixpath.join(str(root).rstrip("/") or "/", LEGACY_KEY_FILE)
        if not fs.exists(legacy):
            return None
    except OSError:
        return None
    return (
        f"this checkpoint root holds {legacy}, the key file of an earlier undertow, which kept "
        f"the key beside the checkpoints; that file is no longer trusted (whoever can write "
        f"the directory could have replaced both it and the metadata). If you are sure nobody "
        f"else could write it, restore with -D {HMAC_KEY_OPTION}=<the hex in that file>"
    )


class CheckpointKey:
    """The metadata key of a job, read or created on first use.

    Construction does no I/O. :meth:`load` returns the key: the first successful call goes
    through :func:`load_or_create_key` (which may create the key file), later calls return it
    from memory. A failed load is not remembered: the next call tries again.

    Threading: :meth:`load` may block on I/O the first time; any thread may call it, a lock
    makes concurrent first calls load once. :attr:`is_loaded` never blocks.
    Invariant: once loaded, the key never changes for the life of the object.
    """

    def __init__(self, configured: str | None, key_file: Path | str | None = None) -> None:
        self._configured = configured
        self.key_file = Path(key_file) if key_file is not None else None
        self._lock = threading.Lock()
        self._key: bytes | None = None

    @classmethod
    def from_config(cls, config: Configuration) -> CheckpointKey:
        """The key ``undertow.checkpointing.hmac-key`` / ``...hmac-key-file`` select."""
        return cls(config.get(Options.HMAC_KEY) or None, key_file_of(config))

    @classmethod
    def of(cls, key: bytes) -> CheckpointKey:
        """A key known already (tests, tools): :meth:`load` does no I/O."""
        known = cls(None)
        known._key = key
        return known

    @property
    def is_loaded(self) -> bool:
        """:meth:`load` has succeeded: it returns at once, without I/O."""
        return self._key is not None

    def load(self) -> bytes:
        """The key; the first call reads or creates it (blocking I/O; raises
        :class:`CheckpointStorageError` or :class:`ConfigurationError`)."""
        key = self._key
        if key is not None:
            return key
        with self._lock:
            if self._key is None:
                self._key = load_or_create_key(configured=self._configured, key_file=self.key_file)
            return self._key

    def __repr__(self) -> str:  # never the key itself
        state = "loaded" if self.is_loaded else "not loaded"
        source = "configured" if self._configured is not None else str(self.key_file)
        return f"CheckpointKey({source}, {state})"


def check_private(path: Path) -> None:
    """Raise :class:`CheckpointStorageError` naming ``path`` and its mode if group or others
    may write it, or the directory holding it (unless that directory is sticky, like /tmp)."""
    mode = path.stat().st_mode
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CheckpointStorageError(
            f"key file {path} has mode {stat.S_IMODE(mode):04o}: group or others may write it, "
            f"so anyone among them could forge checkpoints; refusing it. Run chmod 600 {path} "
            f"if its content is still trusted, or remove it"
        )
    parent = path.parent.stat().st_mode
    if parent & (stat.S_IWGRP | stat.S_IWOTH) and not parent & stat.S_ISVTX:
        raise CheckpointStorageError(
            f"key file {path}: its directory {path.parent} has mode "
            f"{stat.S_IMODE(parent):04o}: group or others may replace the key; refusing it. "
            f"Run chmod 700 {path.parent}"
        )


def _read_key_file(path: Path) -> bytes | None:
    try:
        check_private(path)
        with open(path, "rb") as stream:
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


def _create_key_file(path: Path, content: bytes) -> None:
    """Create ``path`` with ``content`` and mode 0600 unless it exists; atomic."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
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
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
