"""The file sink writer's checkpointed state, and the pure plan of how to restore it.

A writer whose part files can stay open across checkpoints (row formats on a file system that
resumes, :mod:`.recoverable`) returns one :class:`FileWriterBucketState` per open part file
from ``snapshot_state``: the bucket, the resumable (hidden path, final path, valid length),
the part file's times for the rolling policy, the writer's part counter, and ``subtask``: the
subtask whose share of the output directory holds the file (the index in its name).

Routing. The sink operator hands a state to new subtask ``subtask % parallelism`` after a
change of parallelism, the same rule by which a restarted writer deletes the leftovers of its
share (:meth:`.writer.FileWriter.clean_up_earlier_attempts`). So the subtask that may delete a
hidden file is always the one that holds it, and never deletes it under another's feet.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from undertow.connectors.file.recoverable import InProgressFileRecoverable

#: Version of :class:`FileWriterBucketState`; bump when its fields change.
WRITER_STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class FileWriterBucketState:
    """One open part file at a checkpoint (module doc)."""

    bucket_id: str
    in_progress: InProgressFileRecoverable
    creation_time: int
    last_update_time: int
    part_counter: int
    #: The subtask whose share holds the file; routes the state after a rescale.
    subtask: int
    version: int = WRITER_STATE_VERSION


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What a restored writer does with its states: ``resume`` keeps appending (one per
    bucket), ``roll`` is resumed and closed at once; ``part_counter`` is where new names go on."""

    resume: tuple[FileWriterBucketState, ...] = ()
    roll: tuple[FileWriterBucketState, ...] = ()
    part_counter: int = 0
    paths: frozenset[str] = field(default_factory=frozenset)


def plan_restore(states: list[object], what: str) -> RestorePlan:
    """The plan for ``states`` (the restored writer states of one subtask). ``what`` names the
    sink and subtask in errors. Raises ``ValueError`` for a state of another version or type."""
    checked: list[FileWriterBucketState] = []
    for state in states:
        if not isinstance(state, FileWriterBucketState):
            raise ValueError(f"{what}: not a file sink writer state: {state!r}")
        if state.version != WRITER_STATE_VERSION:
            raise ValueError(
                f"{what}: file sink writer state version {state.version!r} for "
                f"{state.in_progress.path!r}, expected {WRITER_STATE_VERSION}"
            )
        checked.append(state)
    newest: dict[str, FileWriterBucketState] = {}
    roll: list[FileWriterBucketState] = []
    for state in sorted(checked, key=lambda s: (s.creation_time, s.in_progress.path)):
        earlier = newest.get(state.bucket_id)
        if earlier is not None:
            roll.append(earlier)
        newest[state.bucket_id] = state
    return RestorePlan(
        resume=tuple(newest.values()),
        roll=tuple(roll),
        part_counter=max((s.part_counter for s in checked), default=0),
        paths=frozenset(s.in_progress.path for s in checked),
    )
