"""Savepoints and stop-with-savepoint: the request and the pure decisions about it.

Savepoints do not need periodic checkpoints (as in Flink): with
``execution.checkpointing.interval`` unset the coordinator and the subtasks' checkpointers
exist all the same and only nothing triggers periodically; a bounded job then still ends
without waiting for a final checkpoint, but every task that takes a stop's savepoint waits for
its completion (:mod:`undertow.runtime.task.lifecycle`). The directory is the one requested,
else ``execution.checkpointing.savepoint-dir`` (:func:`savepoint_directory`). Savepoints are
refused in BATCH execution, which takes no checkpoints at all.
``unaligned=True`` (beyond Flink) takes it with unaligned barriers: in-flight data becomes its
channel state (see :class:`SavepointRequest`).

Threading: plain values; the coordinator calls these on the JobMaster's loop.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from undertow.core.errors import ConfigurationError

#: The option naming the default savepoint directory (Flink's key).
SAVEPOINT_DIR_KEY = "execution.checkpointing.savepoint-dir"
#: The option that gives a job's tasks channel-state writers (Flink's key).
UNALIGNED_KEY = "execution.checkpointing.unaligned.enabled"


@dataclass(frozen=True, slots=True)
class SavepointRequest:
    """Take a savepoint into ``target_directory``; ``stop``: stop the job with it (a
    synchronous savepoint), ``drain``: end event time and finish the operators first;
    ``unaligned``: with unaligned barriers, so a stop under backpressure does not wait for the
    backlog (in-flight data becomes channel state, copied into the savepoint directory like
    its other files). Unaligned needs ``execution.checkpointing.unaligned.enabled`` (tasks
    with channel-state writers) and excludes ``drain``."""

    target_directory: str
    stop: bool = False
    drain: bool = False
    unaligned: bool = False

    def __post_init__(self) -> None:
        if self.drain and not self.stop:
            raise ValueError("drain applies to stop-with-savepoint only")
        if self.drain and self.unaligned:
            raise ValueError(
                "stop-with-savepoint: drain and unaligned exclude each other (a drain "
                "processes every in-flight record; an unaligned savepoint keeps them as "
                "channel state instead)"
            )

    @property
    def kind(self) -> str:
        prefix = "unaligned " if self.unaligned else ""
        if not self.stop:
            return f"{prefix}savepoint"
        return "stop-with-savepoint (drain)" if self.drain else f"{prefix}stop-with-savepoint"


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
    request: SavepointRequest, *, batch: bool, stopping: bool, job_id: str,
    writes_channel_state: bool = False,
) -> str | None:  # fmt: skip
    """Why ``request`` cannot start now, or None when it can. Periodic checkpointing being
    off is no reason: savepoints are taken all the same. ``writes_channel_state``: the job's
    tasks can persist in-flight data (exactly-once with unaligned checkpoints enabled)."""
    if not request.target_directory:
        return f"job {job_id}: a savepoint needs a target directory (or {SAVEPOINT_DIR_KEY})"
    if batch:
        return (
            f"job {job_id}: savepoints are not supported in BATCH execution "
            "(execution.runtime-mode: BATCH takes no checkpoints)"
        )
    if stopping:
        return f"job {job_id} is already stopping with a savepoint"
    if request.unaligned and not writes_channel_state:
        return (
            f"job {job_id}: an {request.kind} into {request.target_directory} needs tasks that "
            f"write channel state; run the job with {UNALIGNED_KEY}: true (and "
            "execution.checkpointing.mode: EXACTLY_ONCE)"
        )
    return None
