"""What a restore control drops, and the workers' half of it: dropping that part from the
state files they read (docs/testing.md, "Controls"; the JobMaster's half is
:mod:`undertow.runtime.master.restore_hook`).

A :class:`RestoreFault` travels with a deployment's restore assignment. The worker applies it
to every ``SubtaskSnapshot`` it reads (:func:`apply_to_snapshot`), before native files are
downloaded, and appends one JSON line per dropped part to the fault's log, so the suite can
tell a control that fired from one that found nothing to drop.

Test-only: production restores carry no fault. Threading: called on a worker's I/O pool; the
log is appended with one ``write`` of one line (atomic with ``O_APPEND``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from collections.abc import Iterable
from typing import Any

from undertow.runtime.checkpoint.snapshot import OperatorSnapshot, SubtaskSnapshot
from undertow.state.snapshot_strategy import NativeStateHandle

#: A file every restore appends a line to (read by the suite's meta-check).
LOG_ENV = "UNDERTOW_RESTORE_LOG"
#: The restore control in force (a :class:`ControlKind` value).
CONTROL_ENV = "UNDERTOW_RESTORE_CONTROL"


class ControlKind(enum.Enum):
    """What a restore control drops (the value is the name used on the command line)."""

    ALL = "all"
    CHANNEL_STATE = "channel-state"
    SOURCE_POSITIONS = "source-positions"
    KEYED_STATE = "keyed-state"
    OPERATOR_STATE = "operator-state"
    SHARED_FILE = "shared-file"

    @classmethod
    def parse(cls, name: str) -> ControlKind:
        try:
            return cls(name)
        except ValueError:
            names = ", ".join(k.value for k in cls)
            raise ValueError(
                f"{CONTROL_ENV}={name!r}: not a restore control; one of {names}"
            ) from None


@dataclasses.dataclass(frozen=True, slots=True)
class RestoreFault:
    """The part of a restore control that the workers apply to the state files they read:
    ``kind`` (never ``ALL``; ``CHANNEL_STATE`` is applied to in-file channel state only), the
    log to append what was dropped to (``""``: none) and, for ``SHARED_FILE``, the path of
    the one shared file that restores as an empty valid file (chosen by the JobMaster)."""

    kind: ControlKind
    log: str = ""
    shared_file: str = ""


def record_to(log: str, event: str, **fields: Any) -> None:
    """Append one JSON line ``{"event": event, "pid": ..., **fields}`` to ``log`` (if set)."""
    if not log:
        return
    line = json.dumps({"event": event, "pid": os.getpid(), **fields}) + "\n"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def apply_to_snapshot(
    fault: RestoreFault, snapshot: SubtaskSnapshot, where: str, source_uids: Iterable[str]
) -> None:
    """Drop the part ``fault`` names from one restored snapshot read by a worker (in place,
    before its native files are downloaded); ``where`` names the subtask for the log,
    ``source_uids`` the uids of source operators (whose custom state is their splits: source
    positions, not operator state)."""
    sources = set(source_uids)
    dropped: list[str] = []
    kind = fault.kind
    if kind is ControlKind.CHANNEL_STATE and snapshot.channel_state is not None:
        snapshot.channel_state = None
        dropped.append("in-file channel state")
    for uid, part in snapshot.operators.items():
        if kind is ControlKind.KEYED_STATE and (part.keyed or part.keyed_native or part.timers):
            part.keyed, part.keyed_native, part.timers = {}, None, {}
            dropped.append(f"keyed state of {uid!r}")
        elif kind is ControlKind.SOURCE_POSITIONS and uid in sources and part.custom:
            part.custom = None
            dropped.append(f"splits of {uid!r}")
        elif kind is ControlKind.OPERATOR_STATE and uid not in sources:
            if part.operator or part.custom:
                part.operator, part.custom = None, None
                dropped.append(f"operator state of {uid!r}")
        elif kind is ControlKind.SHARED_FILE and _empty_segment(part, fault.shared_file):
            dropped.append(f"shared file {fault.shared_file} of {uid!r}")
    for what in dropped:
        record_to(fault.log, "fault", kind=kind.value, what=f"{what}, {where}")


def _empty_segment(part: OperatorSnapshot, path: str) -> bool:
    """Native keyed state referencing the shared file at ``path`` restores as if that file
    were empty, where its format can say so (heap incremental state: every key group sliced
    from it restores empty)."""
    handle: NativeStateHandle | None = part.keyed_native
    if not path or handle is None:
        return False
    without = handle.without_shared_file(path)
    if without is None:
        return False
    part.keyed_native = without
    return True
