"""The coordinator's side of incremental checkpoints: shared files registered, released, deleted.

Wires the pure :class:`~.shared_state_registry.SharedStateRegistry` to the checkpoint lifecycle
(FLIP-193): a completed checkpoint registers its ``shared/`` files before it subsumes anything;
a subsumed one releases them (a file nobody holds goes if the job owns it); an aborted one
registers its uploads and releases at once. Channel-state files of this job's checkpoints that a
checkpoint taken during recovery refers to (FLIP-76) are held the same way, named by location in
their ``chk-<n>/``, whose discard keeps them while held (:meth:`SharedFiles.kept_in`). CLAIM
restores are adopted (:meth:`SharedFiles.adopt`) with the older channel-state files the claimed
checkpoint refers to; after a NO_CLAIM restore the files are duplicated into this job's
``shared/`` (:meth:`SharedFiles.duplicate`), held until the first checkpoint completed.

Files are named by absolute location. Decisions on the coordinator's loop;
:meth:`SharedFiles.delete` is I/O (executor). The story: docs/design.md, "Module notes".
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Iterable

from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode
from undertow.runtime.checkpoint.shared_state_registry import Release, SharedStateRegistry
from undertow.storage import FileHandle
from undertow.storage.checkpoint_storage import SHARED_DIR, CheckpointStorage
from undertow.storage.duplicate import SharedFileDuplication

log = logging.getLogger(__name__)

_CHECKPOINT_DIR = re.compile(r"chk-(0|[1-9][0-9]*)")


class SharedFiles:
    """Registered shared files of one job's checkpoints (see the module docstring).

    Loop thread only, except :meth:`delete` (any thread; it touches no registry state)."""

    def __init__(self, storage: CheckpointStorage) -> None:
        self.storage = storage
        self.registry = SharedStateRegistry()

    def completed(
        self, checkpoint_id: int, shared: Iterable[FileHandle],
        channel_state: Iterable[FileHandle] = (),
    ) -> None:  # fmt: skip
        """Checkpoint ``checkpoint_id`` of this job completed referencing ``shared`` and
        ``channel_state``: channel-state files of this job's older checkpoints (``chk-<n>/``)
        it refers to instead of writing their data again (FLIP-76). They are held like shared
        files, so they outlive their own checkpoint's subsumption (:meth:`kept_in`)."""
        uris = [self.storage.shared_file_uri(h.path) for h in shared]
        uris += [self.storage.job_file_uri(h.path) for h in channel_state]
        self.registry.register(checkpoint_id, uris)

    def kept_in(self, checkpoint_id: int) -> frozenset[str]:
        """Names of the files in this job's ``chk-<checkpoint_id>/`` that a retained
        checkpoint holds: its directory's discard keeps them."""
        prefix = self.storage.checkpoint_pointer(checkpoint_id).rstrip("/") + "/"
        return frozenset(
            uri[len(prefix):] for uri in self.registry.held_paths() if uri.startswith(prefix)
        )  # fmt: skip

    def holding_directories(self) -> frozenset[int]:
        """Ids of this job's ``chk-<n>/`` directories that hold a file a retained checkpoint
        refers to (an orphan sweep must leave them)."""
        prefix = self.storage.job_uri.rstrip("/") + "/chk-"
        ids = set()
        for uri in self.registry.held_paths():
            if uri.startswith(prefix):
                number = uri[len(prefix) :].split("/", 1)[0]
                if number.isdigit():
                    ids.add(int(number))
        return frozenset(ids)

    def restored(
        self,
        checkpoint_id: int,
        pointer: str,
        shared: Iterable[FileHandle],
        mode: RecoveryClaimMode,
        adopted: Iterable[str] = (),
        channel_state: Iterable[FileHandle] = (),
    ) -> None:
        """The job started from the checkpoint at ``pointer`` (``.../<job>/chk-<n>``) in
        ``mode``: under CLAIM its shared files, their ``adopted`` links in this job's
        ``shared/``, and the ``channel_state`` files of its job's older checkpoints it refers
        to (``chk-<m>/<name>``, FLIP-76) are registered as owned and held by it, so they go
        when it is subsumed (or discarded at the end) and nothing holds them; under NO_CLAIM
        nothing is (the files are the user's: never deleted, never rewritten)."""
        if mode is not RecoveryClaimMode.CLAIM:
            return
        uris = [*_restored_uris(pointer, shared), *adopted]
        uris += _referred_uris(pointer, channel_state)
        self.registry.register_restored(checkpoint_id, uris, mode)

    def adopt(self, pointer: str, shared: Iterable[FileHandle]) -> list[str]:
        """Before the first attempt of a job restored in CLAIM from the checkpoint at
        ``pointer``: link each of its ``shared`` files into this job's ``shared/`` (see the
        module docstring); returns their locations here. Blocking I/O (executor); raises
        what the storage raises, naming the file."""
        return [self.storage.adopt_shared_file(uri) for uri in _restored_uris(pointer, shared)]

    def duplicate(self, pointer: str, shared: Iterable[FileHandle]) -> list[str]:
        """Before the first attempt of a job restored in NO_CLAIM from the checkpoint at
        ``pointer``: duplicate each distinct ``shared`` file into this job's ``shared/``
        without uploading it (:meth:`.CheckpointStorage.duplicate_shared_file`); returns their
        locations here. Ownership: this call, once per job, is the only one that duplicates,
        so each file is duplicated exactly once whatever the parallelism the job restores at
        (the tasks never duplicate). Returns ``[]`` -- the first checkpoint then uploads
        everything again -- when the storage cannot duplicate every file (logged once, naming
        the first file). Blocking I/O (executor); raises what the storage raises."""
        uris = sorted(set(_restored_uris(pointer, shared)))
        storage = self.storage
        if not isinstance(storage, SharedFileDuplication):
            log.info("job %s: checkpoint storage %s cannot duplicate files; the first "
                     "checkpoint uploads the restored state again", storage.job_id,
                     type(storage).__name__)  # fmt: skip
            return []
        methods = {uri: storage.duplicate_method(uri) for uri in uris}
        missing = [uri for uri, method in methods.items() if method is None]
        if missing:
            log.info("job %s: %d restored shared files (first %s) cannot be duplicated into "
                     "%s; the first checkpoint uploads the restored state again",
                     storage.job_id, len(missing), missing[0], storage.job_uri)  # fmt: skip
            return []
        return [storage.duplicate_shared_file(uri) for uri in uris]

    def hold_duplicates(self, restored_id: int, duplicates: Iterable[str]) -> None:
        """The ``duplicates`` of a NO_CLAIM restore (:meth:`duplicate`) are this job's own
        files, held by ``restored_id`` (the restored checkpoint's id, below every id of this
        job) until :meth:`released` (the first completed checkpoint, or the job's end)."""
        self.registry.register(restored_id, duplicates)

    def aborted(self, checkpoint_id: int, shared: Iterable[FileHandle]) -> Release:
        """An aborted checkpoint's acknowledged uploads: what nobody else holds goes."""
        self.completed(checkpoint_id, shared)
        return self.registry.release(checkpoint_id)

    def released(self, checkpoint_id: int) -> Release | None:
        """Checkpoint ``checkpoint_id`` left the store (subsumed or discarded at shutdown);
        ``None`` if it held no shared files (a savepoint, or not incremental)."""
        if checkpoint_id not in self.registry.held_checkpoints():
            return None
        return self.registry.release(checkpoint_id)

    def sweep(self) -> list[str]:
        """When the job ends (nothing pending, no task running): delete the files in this
        job's ``shared/`` no retained checkpoint holds -- uploads of checkpoints that never
        completed and whose acknowledgement was lost with a failed attempt. Blocking I/O;
        returns what went."""
        orphans = [uri for uri in self.storage.shared_file_uris() if not self.registry.holders(uri)]
        self.delete(Release(-1, tuple(orphans)))
        return orphans

    def delete(self, release: Release) -> None:
        """Delete the files ``release`` decided to delete (blocking I/O); failures are logged
        with the file and the checkpoint, not raised."""
        for uri in release.delete:
            try:
                if posixpath.basename(posixpath.dirname(uri)) == SHARED_DIR:
                    self.storage.discard_shared_file(uri)
                else:  # a channel-state file a newer (or a claimed) checkpoint referred to
                    self.storage.discard_checkpoint_file(uri)
            except (OSError, ValueError) as err:
                job, cid = self.storage.job_id, release.checkpoint_id
                log.warning("job %s: could not delete shared file %s (released by checkpoint "
                            "%d): %s", job, uri, cid, err)  # fmt: skip


def _restored_uris(pointer: str, shared: Iterable[FileHandle]) -> list[str]:
    job_dir = posixpath.dirname(pointer.rstrip("/"))
    return [posixpath.join(job_dir, _shared_path(h.path)) for h in shared]


def _shared_path(path: str) -> str:
    if not path.startswith(SHARED_DIR + "/") or path.count("/") != 1:
        raise ValueError(f"restored checkpoint references {path!r}, not a file in {SHARED_DIR}/")
    return path


def _referred_uris(pointer: str, channel_state: Iterable[FileHandle]) -> list[str]:
    """The locations of the channel-state files (``chk-<m>/<name>``, relative to the job
    directory of the snapshot at ``pointer``) that the snapshot refers to."""
    job_dir = posixpath.dirname(pointer.rstrip("/"))
    uris = []
    for handle in channel_state:
        parts = handle.path.split("/")
        if len(parts) != 2 or not _CHECKPOINT_DIR.fullmatch(parts[0]) or not parts[1]:
            raise ValueError(
                f"restored checkpoint at {pointer} refers to channel state {handle.path!r}, "
                "not a file in a chk-<n>/ directory of its job"
            )
        uris.append(posixpath.join(job_dir, handle.path))
    return uris
