"""Savepoints and stop-with-savepoint: the request and the pure decisions about it.

A savepoint (reference §6.4, §7) is an aligned snapshot of type ``SAVEPOINT`` that the user
triggers and owns: it is exported into a self-contained directory
(``<target>/savepoint-<jobid6>-<n>/``, see :mod:`undertow.storage.checkpoint_storage`), never
added to the completed-checkpoint store, so retention never subsumes or deletes it, and failover
never restores it. Two kinds, as in Flink:

* *intermediate* (``trigger_savepoint``): the job goes on; no ``notify_checkpoint_complete``, so
  two-phase-commit sinks do not commit on it (their committables are committed by the next
  checkpoint, which includes them);
* *synchronous* (``stop_with_savepoint``): periodic checkpoints stop (pending ones complete
  or not; every task takes them before its ``EndOfData``), the sources end their data
  (``EndOfData``; with ``drain`` after the MAX watermark and ``finish()``), then the savepoint
  is triggered, so its barrier follows ``EndOfData`` on every channel. Its completion is
  notified (sinks commit) and is every task's final checkpoint, so the job then ends
  ``FINISHED``. If it fails after the sources stopped, the job fails over to its latest
  checkpoint (nothing is lost; the sources read on from there).

Threading: plain values; the coordinator calls these on the JobMaster's loop.
"""

from __future__ import annotations

from dataclasses import dataclass


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


def refuse_savepoint(
    request: SavepointRequest, *, checkpointing_enabled: bool, stopping: bool, job_id: str
) -> str | None:
    """Why ``request`` cannot start now, or None when it can."""
    if not request.target_directory:
        return f"job {job_id}: a savepoint needs a target directory"
    if not checkpointing_enabled:
        return (
            f"job {job_id}: savepoints need checkpointing enabled "
            "(execution.checkpointing.interval > 0)"
        )
    if stopping:
        return f"job {job_id} is already stopping with a savepoint"
    return None
