"""What the file sink commits, and the pure decision of how to commit it.

=================  ===================================  ====================================
pending file       final file                           decision
=================  ===================================  ====================================
exists             missing                              RENAME
missing            exists                               ALREADY_COMMITTED (no-op)
exists             exists, expected size                DROP_PENDING (a copy-then-delete
                                                        rename of an object store was
                                                        interrupted after the copy)
exists             exists, other size                   RENAME (overwrite the partial copy)
missing            missing                              MISSING (an error naming both files)
=================  ===================================  ====================================

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from undertow.core.errors import UndertowError


@dataclass(frozen=True, slots=True)
class FileSinkCommittable:
    """A pending part file (hidden) and its final path, both full fsspec URLs."""

    pending_path: str
    final_path: str
    size: int
    #: The subtask index in the part file's name: whose share of the output holds it. The
    #: subtask that created the file; a file resumed after a rescale keeps it. Restoring at
    #: another parallelism routes the committable by this (``subtask % parallelism``), the
    #: same rule by which restarted writers clean up leftovers (:mod:`.writer`).
    subtask: int


class CommitDecision(enum.Enum):
    RENAME = "rename"
    ALREADY_COMMITTED = "already committed"
    DROP_PENDING = "drop pending copy"
    MISSING = "missing"


def decide_commit(
    pending_exists: bool, final_size: int | None, expected_size: int
) -> CommitDecision:
    """The table in the module doc; ``final_size`` is ``None`` when the final file is missing."""
    if pending_exists:
        if final_size is not None and final_size == expected_size:
            return CommitDecision.DROP_PENDING
        return CommitDecision.RENAME
    if final_size is not None:
        return CommitDecision.ALREADY_COMMITTED
    return CommitDecision.MISSING


class FileSinkCommitError(UndertowError):
    """A pending part file to commit is gone and its final file does not exist either."""
