"""Checkpoint storage: files, the atomic ``_metadata`` commit, and the metadata key.

Below the runtime and above ``core`` in the layering: it knows files, paths and checksums,
not what a checkpoint means. Listing and verifying checkpoints, which needs the metadata codec
too, is :mod:`undertow.cli.checkpoints`.
"""

from undertow.storage.checkpoint_storage import (
    CHECKPOINT_DIR_PREFIX,
    METADATA_FILE,
    SHARED_DIR,
    TASKOWNED_DIR,
    CheckpointDirectory,
    CheckpointLocation,
    CheckpointStorage,
)
from undertow.storage.errors import (
    CheckpointNotFoundError,
    CheckpointStorageError,
    CorruptCheckpointError,
)
from undertow.storage.handle import FileHandle
from undertow.storage.keys import (
    HMAC_KEY_FILE_OPTION,
    HMAC_KEY_OPTION,
    LEGACY_KEY_FILE,
    CheckpointKey,
    default_key_file,
    legacy_key_hint,
    load_or_create_key,
    parse_key,
    read_key,
)

__all__ = [
    "CHECKPOINT_DIR_PREFIX",
    "HMAC_KEY_FILE_OPTION",
    "HMAC_KEY_OPTION",
    "LEGACY_KEY_FILE",
    "METADATA_FILE",
    "SHARED_DIR",
    "TASKOWNED_DIR",
    "CheckpointDirectory",
    "CheckpointKey",
    "CheckpointLocation",
    "CheckpointNotFoundError",
    "CheckpointStorage",
    "CheckpointStorageError",
    "CorruptCheckpointError",
    "FileHandle",
    "default_key_file",
    "legacy_key_hint",
    "load_or_create_key",
    "parse_key",
    "read_key",
]
