"""Savepoints and stop-with-savepoint: the request and the pure decisions about it.

Savepoints do not need periodic checkpoints (as in Flink): with
``execution.checkpointing.interval`` unset the coordinator and the subtasks' checkpointers
exist all the same and only nothing triggers periodically; a bounded job then still ends
without waiting for a final checkpoint, but every task that takes a stop's savepoint waits for
its completion (:mod:`undertow.runtime.task.lifecycle`). The directory is the one requested,
else ``execution.checkpointing.savepoint-dir`` (:func:`savepoint_directory`). Savepoints are
refused in BATCH execution, which takes no checkpoints at all.

Threading: plain values; the coordinator calls these on the JobMaster's loop.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from undertow.core.errors import ConfigurationError

#: The option naming the default savepoint directory (Flink's key).
SAVEPOINT_DIR_KEY = "execution.checkpointing.savepoint-dir"


@dataclass(frozen=True, slots=True)
class SavepointRequest:
    """Take a savepoint into ``target_directory``; ``stop``: stop the job with it (a
    synchronous savepoint), ``drain``: end event time and finish the operators first."""

    target_directory: str
    stop: bool = False
    drain: bool = False

    def __post_init__(self) -> None:
        if self.drain and not self.stop:
            raise ValueError("drain applies to stop-with-savepoint only")

    @property
    def kind(self) -> str:
        if not self.stop:
            return "savepoint"
        return "stop-with-savepoint (drain)" if self.drain else "stop-with-savepoint"


def savepoint_directory(requested: str | None, configured: str, job_id: str, kind: str) -> str:
    """The directory a savepoint goes into: ``requested``, else ``configured`` (the value of
    ``execution.checkpointing.savepoint-dir``); raises :class:`ConfigurationError` naming the
    job and the option when neither is given."""
    if requested:
        return requested
    if configured:
        return configured
    raise ConfigurationError(
        f"{kind} of job {job_id}: no savepoint directory; pass one (trigger_savepoint(path), "
        f"stop_with_savepoint(path), undertow stop --savepoint-path DIR) or set "
        f"{SAVEPOINT_DIR_KEY}"
    )


def refuse_savepoint(
    request: SavepointRequest, *, batch: bool, stopping: bool, job_id: str
) -> str | None:
    """Why ``request`` cannot start now, or None when it can. Periodic checkpointing being
    off is no reason: savepoints are taken all the same."""
    if not request.target_directory:
        return f"job {job_id}: a savepoint needs a target directory (or {SAVEPOINT_DIR_KEY})"
    if batch:
        return (
            f"job {job_id}: savepoints are not supported in BATCH execution "
            "(execution.runtime-mode: BATCH takes no checkpoints)"
        )
    if stopping:
        return f"job {job_id} is already stopping with a savepoint"
    return None
