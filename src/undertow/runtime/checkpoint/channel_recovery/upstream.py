"""The consumer side of a rescaled restore: when a gate's re-emitted data has all arrived.

After a rescale, every new producer of a rescaled edge re-emits the old channels it took over
and then sends a blocking ``EndOfChannelStateEvent`` on each subpartition (:mod:`.rescale`).
:class:`UpstreamRecoveryTracker` (Flink's name) counts those events per gate; once every
channel of a gate delivered one, it resumes all of them (live data may flow), and once every
recovering gate of the subtask did, it calls ``on_recovered`` once (the worker then tells the
JobMaster, which triggers no checkpoint before every subtask recovered).

Threading: the task's loop thread (called by the event dispatch). Lifecycle: one per subtask
attempt; ``recovering`` only shrinks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol


class RecoveringChannel(Protocol):
    """An input channel as the tracker sees it."""

    @property
    def index(self) -> int: ...

    def resume_consumption(self) -> None: ...


class RecoveringGate(Protocol):
    """An input gate as the tracker sees it."""

    @property
    def channels(self) -> Sequence[RecoveringChannel]: ...


class UpstreamRecoveryTracker:
    """Tracks the gates (``recovering_gates``: indices into the subtask's gates) that receive
    re-emitted data; ``on_recovered`` is called once, when the last of them ended it."""

    def __init__(
        self,
        recovering_gates: frozenset[int] = frozenset(),
        on_recovered: Callable[[], None] | None = None,
    ) -> None:
        #: Indices of the gates still receiving re-emitted data.
        self.recovering: set[int] = set(recovering_gates)
        self._on_recovered = on_recovered
        #: gate index -> indices of its channels that delivered EndOfChannelStateEvent so far.
        self._ended: dict[int, set[int]] = {}

    @property
    def is_recovering(self) -> bool:
        """Some gate still receives re-emitted data."""
        return bool(self.recovering)

    def end_of_channel_state(
        self, gate_index: int, gate: RecoveringGate, channel: RecoveringChannel
    ) -> None:
        """``channel`` of gate ``gate_index`` delivered its ``EndOfChannelStateEvent`` (and is
        blocked by it); once every channel of the gate did, resume them all."""
        done = self._ended.setdefault(gate_index, set())
        done.add(channel.index)
        if len(done) < len(gate.channels):
            return
        del self._ended[gate_index]
        for ch in gate.channels:
            ch.resume_consumption()
        self.recovering.discard(gate_index)
        callback = self._on_recovered
        if not self.recovering and callback is not None:
            self._on_recovered = None
            callback()


class RecoveryCountdown:
    """Calls ``on_recovered`` once, when the last of ``parts`` things the subtask recovers
    before checkpoints may be triggered ended (its rescaled gates' re-emitted data; with
    during-recovery off, its restored input). ``parts`` 0: never calls (nothing to report).

    Threading: the task's loop thread. Invariant: ``on_recovered`` runs at most once, and
    only after :meth:`part_done` was called ``parts`` times.
    """

    def __init__(self, parts: int, on_recovered: Callable[[], None] | None) -> None:
        self._left = parts
        self._on_recovered = on_recovered if parts > 0 else None

    def part_done(self) -> None:
        """One part ended (each part calls this once)."""
        self._left -= 1
        callback = self._on_recovered
        if self._left <= 0 and callback is not None:
            self._on_recovered = None
            callback()
