"""Savepoints and stop-with-savepoint: the request and the pure decisions about it.

Savepoints need no periodic checkpoints (as in Flink): with no interval nothing triggers
periodically, and every task that takes a stop's savepoint waits for its completion. The
directory is the one requested, else ``execution.checkpointing.savepoint-dir``; BATCH
execution refuses savepoints. ``unaligned=True`` (beyond Flink) turns in-flight data into
channel state (:class:`SavepointRequest`). ``format_type`` (``SavepointFormatType``) is
recorded in ``_metadata`` with the backend; a NATIVE savepoint restores only into the same
backend (:func:`refuse_restore`).

Threading: plain values; the coordinator calls these on the JobMaster's loop.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from undertow.core.errors import ConfigurationError
from undertow.core.modes import SavepointFormatType

#: The option naming the default savepoint directory (Flink's key).
SAVEPOINT_DIR_KEY = "execution.checkpointing.savepoint-dir"
#: The option that gives a job's tasks channel-state writers (Flink's key).
UNALIGNED_KEY = "execution.checkpointing.unaligned.enabled"
#: The keys of a savepoint's ``_metadata`` properties that record its format and backend.
FORMAT_PROPERTY = "savepoint_format"
BACKEND_PROPERTY = "state_backend"


@dataclass(frozen=True, slots=True)
class SavepointRequest:
    """Take a savepoint into ``target_directory``; ``stop``: stop the job with it (a
    synchronous savepoint), ``drain``: end event time and finish the operators first;
    ``unaligned``: with unaligned barriers, so a stop under backpressure does not wait for the
    backlog (in-flight data becomes channel state, copied into the savepoint directory like
    its other files). Unaligned needs ``execution.checkpointing.unaligned.enabled`` (tasks
    with channel-state writers) and excludes ``drain``. ``format_type``: CANONICAL, or
    NATIVE (the backend's own files, inside the savepoint directory)."""

    target_directory: str
    stop: bool = False
    drain: bool = False
    unaligned: bool = False
    format_type: SavepointFormatType = SavepointFormatType.CANONICAL

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
    def native(self) -> bool:
        return self.format_type is SavepointFormatType.NATIVE

    @property
    def kind(self) -> str:
        prefix = ("unaligned " if self.unaligned else "") + ("native " if self.native else "")
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


def savepoint_properties(request: SavepointRequest, state_backend: str) -> dict[str, str]:
    """What a savepoint's ``_metadata`` records besides the checkpoint properties: its format
    and the ``state.backend.type`` of the job that took it (what :func:`refuse_restore`
    checks)."""
    return {FORMAT_PROPERTY: request.format_type.name, BACKEND_PROPERTY: state_backend}


def refuse_restore(properties: dict[str, str], pointer: str, state_backend: str) -> str | None:
    """Why the snapshot at ``pointer`` (its ``_metadata`` ``properties``) cannot restore into
    a job on ``state_backend``, or None: a NATIVE savepoint holds the backend's own files, so
    it restores only into the backend that took it (Flink refuses too); a CANONICAL one (and
    any checkpoint: a retained incremental one is checked per operator when it restores) may
    switch backends."""
    if properties.get(FORMAT_PROPERTY) != SavepointFormatType.NATIVE.name:
        return None
    taken_by = properties.get(BACKEND_PROPERTY, "")
    if taken_by == state_backend:
        return None
    return (
        f"savepoint {pointer} is in the NATIVE format of the {taken_by!r} state backend and "
        f"cannot be restored into a job on the {state_backend!r} backend (state.backend.type); "
        f"restore it with state.backend.type: {taken_by}, or take a CANONICAL savepoint to "
        "switch backends"
    )
