"""The file sink's committer: renames pending part files to their final, visible names.

Runs on the sink's task thread, in ``notify_checkpoint_complete`` (and, after a restore, before
the writer starts). Blocking file-system calls, one ``info`` and at most one ``mv`` per file.
Idempotent (see :mod:`.committable`); raises :class:`FileSinkCommitError` for a committable
whose pending and final files are both missing, naming both.
"""

from __future__ import annotations

import logging
from typing import Any

import fsspec  # type: ignore[import-untyped]

from undertow.connectors.file.committable import (
    CommitDecision,
    FileSinkCommitError,
    FileSinkCommittable,
    decide_commit,
)
from undertow.connectors.sink import Committer

log = logging.getLogger(__name__)


def _size(fs: Any, path: str) -> int | None:
    try:
        return int(fs.info(path).get("size") or 0)
    except FileNotFoundError:
        return None


class FileCommitter(Committer):
    def __init__(self) -> None:
        self.committed = 0
        self.already_committed = 0

    def commit(self, committables: list[Any]) -> None:
        for committable in committables:
            if not isinstance(committable, FileSinkCommittable):
                raise TypeError(f"FileSink committer: not a FileSinkCommittable: {committable!r}")
            self.commit_one(committable)

    def commit_one(self, c: FileSinkCommittable) -> CommitDecision:
        fs, pending = fsspec.core.url_to_fs(c.pending_path)
        _, final = fsspec.core.url_to_fs(c.final_path)
        decision = decide_commit(fs.exists(pending), _size(fs, final), c.size)
        if decision is CommitDecision.RENAME:
            fs.mv(pending, final)
            self.committed += 1
        elif decision is CommitDecision.DROP_PENDING:
            fs.rm(pending)
            self.already_committed += 1
        elif decision is CommitDecision.ALREADY_COMMITTED:
            self.already_committed += 1
        else:
            raise FileSinkCommitError(
                f"FileSink (subtask {c.subtask}): cannot commit part file {c.final_path!r}: "
                f"neither the pending file {c.pending_path!r} nor the final file exists "
                f"(expected {c.size} bytes); was the output directory changed by someone else?"
            )
        log.debug("FileSink commit %s: %s", c.final_path, decision.value)
        return decision
