"""Restore controls for users' and our own restore tests (docs/testing.md, "Controls").

A bounded deterministic source replayed from its start gives a perfect tally, so a restore test
must assert the restore itself and be seen failing when the restore is lost.
:class:`RestoreEvidenceMissing` is the one failure restore-evidence checks raise
(:func:`evidence`, ``OracleResult.assert_restored``); under a control only it counts as caught.
:func:`restore_control` runs a block with a control in force: every restore of a job started
meanwhile, here or in a subprocess inheriting the environment (``undertow run``), ignores one
part of its snapshot (a :class:`ControlKind`) while still being reported;
:func:`restore_events` reads what the restore log says happened.

Threading: the control is process environment; do not run two controlled blocks at once.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from undertow.runtime.checkpoint.restore_fault import CONTROL_ENV, LOG_ENV, ControlKind

__all__ = [
    "CONTROL_ENV",
    "LOG_ENV",
    "ControlKind",
    "RestoreEvents",
    "RestoreEvidenceMissing",
    "evidence",
    "restore_control",
    "restore_events",
]


class RestoreEvidenceMissing(AssertionError):
    """A restore test found no evidence that its restore carried anything over: no restore
    reported, or the source started over, no state was carried over, no in-flight record was
    replayed. Raised by restore-evidence checks only, so that a control can tell a test that
    caught the lost restore from one that failed for another reason."""


def evidence(condition: object, message: str) -> None:
    """Raise :class:`RestoreEvidenceMissing` with ``message`` unless ``condition``: the form of
    a restore test's own check that its restore carried something over (state, source
    positions, in-flight records, a resumed file)."""
    if not condition:
        raise RestoreEvidenceMissing(message)


@dataclass(frozen=True)
class RestoreEvents:
    """Restores (checkpoint ids, in order) and the parts a control dropped (``kind: what``)."""

    restored: tuple[int, ...]
    dropped: tuple[str, ...]


def restore_events(log: str | os.PathLike[str]) -> RestoreEvents:
    """Parse a restore log (``$UNDERTOW_RESTORE_LOG``); a missing file means no event."""
    restored: list[int] = []
    dropped: list[str] = []
    try:
        with open(log, encoding="utf-8") as lines:
            for line in lines:
                event = json.loads(line)
                if event["event"] == "restore":
                    restored.append(int(event["checkpoint"]))
                elif event["event"] == "fault":
                    dropped.append(f"{event['kind']}: {event['what']}")
    except FileNotFoundError:
        pass
    return RestoreEvents(tuple(restored), tuple(dropped))


@contextmanager
def restore_control(kind: ControlKind | str) -> Iterator[str]:
    """Run the block with the restore control ``kind`` in force (module doc). Yields the path
    of the restore log (``$UNDERTOW_RESTORE_LOG``, a new temporary file unless already set);
    read it with :func:`restore_events` to see whether the control fired."""
    kind = ControlKind.parse(kind) if isinstance(kind, str) else kind
    previous = {name: os.environ.get(name) for name in (CONTROL_ENV, LOG_ENV)}
    log = previous[LOG_ENV]
    if not log:
        handle, log = tempfile.mkstemp(prefix="undertow-restore-", suffix=".log")
        os.close(handle)
    os.environ[CONTROL_ENV] = kind.value
    os.environ[LOG_ENV] = log
    try:
        yield log
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
