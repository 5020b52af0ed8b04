"""The shared-state registry (Flink's ``SharedStateRegistry``, FLIP-193): who may delete a file
that several checkpoints share.

Per file in ``<dir>/<job>/shared/``, the checkpoints that hold it, from registration (pending
ones too) until release (subsumed, aborted, discarded). When the last holder lets go the file is
deleted, but only if the job owns it: files its own checkpoints uploaded are owned; files of the
snapshot it was restored from are owned under ``CLAIM``, never under ``NO_CLAIM`` (the user's,
also when a later checkpoint references them). Ownership is fixed at first registration.

Pure: paths and checkpoint ids in, a :class:`Release` decision out; the coordinator deletes the
files on its loop. Not thread-safe (the coordinator's loop only). Cost: O(files of the
checkpoint) per call.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from undertow.core.errors import StateError
from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode


@dataclass(frozen=True, slots=True)
class Release:
    """What releasing a checkpoint decided: ``delete`` (owned files nobody holds any more, to
    delete now) and ``forget`` (unowned files nobody holds: left alone, no longer tracked)."""

    checkpoint_id: int
    delete: tuple[str, ...]
    forget: tuple[str, ...] = field(default=())


class SharedStateRegistry:
    """Reference counts of shared files across held checkpoints (see the module docstring)."""

    def __init__(self) -> None:
        self._holders: dict[str, set[int]] = {}  # path -> checkpoint ids holding it
        self._owned: dict[str, bool] = {}  # path -> may the job delete it
        self._files: dict[int, frozenset[str]] = {}  # checkpoint id -> its files

    def register(self, checkpoint_id: int, paths: Iterable[str]) -> None:
        """Checkpoint ``checkpoint_id`` (pending or completed) holds ``paths``; paths the
        registry does not know yet were written by this job and are owned by it."""
        self._add(checkpoint_id, paths, owned=True)

    def register_restored(
        self, checkpoint_id: int, paths: Iterable[str], mode: RecoveryClaimMode
    ) -> None:
        """The snapshot the job was restored from holds ``paths``; owned only under CLAIM."""
        self._add(checkpoint_id, paths, owned=mode is RecoveryClaimMode.CLAIM)

    def _add(self, checkpoint_id: int, paths: Iterable[str], *, owned: bool) -> None:
        if checkpoint_id in self._files:
            raise StateError(
                f"shared state registry: checkpoint {checkpoint_id} registered its files twice"
            )
        files = frozenset(paths)
        self._files[checkpoint_id] = files
        for path in files:
            holders = self._holders.get(path)
            if holders is None:
                self._holders[path] = {checkpoint_id}
                self._owned[path] = owned
            else:
                holders.add(checkpoint_id)
                self._owned[path] = self._owned[path] and owned

    def release(self, checkpoint_id: int) -> Release:
        """Checkpoint ``checkpoint_id`` no longer holds its files (subsumed, aborted or
        discarded); the files nobody holds any more are deleted (owned) or forgotten."""
        files = self._files.pop(checkpoint_id, None)
        if files is None:
            raise StateError(
                f"shared state registry: checkpoint {checkpoint_id} holds no files "
                f"(never registered or released before; held: {sorted(self._files)})"
            )
        delete: list[str] = []
        forget: list[str] = []
        for path in sorted(files):
            holders = self._holders[path]
            holders.discard(checkpoint_id)
            if holders:
                continue
            del self._holders[path]
            (delete if self._owned.pop(path) else forget).append(path)
        return Release(checkpoint_id, tuple(delete), tuple(forget))

    def holders(self, path: str) -> frozenset[int]:
        """The checkpoints that hold ``path`` now (empty if none)."""
        return frozenset(self._holders.get(path, ()))

    def is_owned(self, path: str) -> bool:
        """Whether the job may delete ``path`` once nobody holds it (``False`` if unknown)."""
        return self._owned.get(path, False)

    def files_of(self, checkpoint_id: int) -> frozenset[str]:
        """The files ``checkpoint_id`` holds now (empty if it holds none)."""
        return self._files.get(checkpoint_id, frozenset())

    def held_paths(self) -> list[str]:
        """Every file some checkpoint holds now."""
        return list(self._holders)

    def held_checkpoints(self) -> list[int]:
        return sorted(self._files)

    def __len__(self) -> int:
        """Number of tracked files."""
        return len(self._holders)
