"""What one subtask's checkpoint contains, before it is written to storage.

Per operator (keyed by uid): keyed state per key group, timers per key group, operator state,
and operator-specific state (a source reader's splits, a sink's pending committables). A
subtask's snapshot is serialized into one state file; the coordinator only sees its handle.
Keyed parts are per key group, so a restore at another parallelism picks the key groups it
owns from every old subtask whose range overlaps.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class OperatorSnapshot:
    keyed: dict[int, bytes] = field(default_factory=dict)
    timers: dict[int, bytes] = field(default_factory=dict)
    operator: bytes | None = None
    custom: bytes | None = None

    @property
    def is_empty(self) -> bool:
        return not (self.keyed or self.timers or self.operator or self.custom)


@dataclass
class SubtaskSnapshot:
    """All operators of one subtask's chain; ``watermark`` is the last one emitted;
    ``parallelism`` is the one the snapshot was taken at (None in snapshots written before it
    was recorded), which tells a restore whether state must be redistributed."""

    operators: dict[str, OperatorSnapshot] = field(default_factory=dict)
    watermark: int | None = None
    parallelism: int | None = None
