"""An in-memory channel-state writer for tests of the checkpoint path.

:class:`InMemoryChannelStateWriter` implements the runtime's ``ChannelStateWriter`` Protocol
(:mod:`undertow.runtime.checkpoint.channel_state_writer`) without files: the finished channel
state is a ``ChannelState`` that goes into the subtask's own state file. Workers never use it
(they write shared channel-state files); restoring state files written that way still works.

Threading: the task's loop thread only; callbacks run synchronously inside ``finish_*``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from undertow.runtime.checkpoint.channel_state_writer import ChannelStateResult
from undertow.runtime.checkpoint.snapshot import ChannelState, InputChannelInfo, SubpartitionInfo
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.record_writer import RecordWriter


class _Open:
    __slots__ = ("callback", "input_done", "inputs", "output_done", "outputs")

    def __init__(self) -> None:
        self.inputs: dict[InputChannelInfo, list[bytes]] = {}
        self.outputs: dict[SubpartitionInfo, list[bytes]] = {}
        self.input_done = False
        self.output_done = False
        self.callback: Callable[[ChannelStateResult], None] | None = None


class InMemoryChannelStateWriter:
    """Keeps a subtask's channel state in memory until both sides finished.

    ``subtask_index``, ``parallelism``, ``gate_channels`` and ``subpartitions`` describe the
    subtask and go into every :class:`ChannelState` (a restore checks them). Cost: O(1) per
    call; memory is the in-flight data of the open checkpoints.
    """

    #: The result goes into the subtask's state file (see ``ChannelStateWriter``).
    in_state_file = True

    @classmethod
    def of(
        cls,
        gates: Sequence[InputGate],
        writers: Sequence[RecordWriter],
        subtask_index: int = 0,
        parallelism: int = 1,
    ) -> InMemoryChannelStateWriter:
        """A writer for the subtask with these input gates and record writers."""
        return cls(
            subtask_index, parallelism, tuple(len(g.channels) for g in gates),
            tuple(len(w.partition.subpartitions) for w in writers),
        )  # fmt: skip

    def __init__(
        self,
        subtask_index: int = 0,
        parallelism: int = 1,
        gate_channels: tuple[int, ...] = (),
        subpartitions: tuple[int, ...] = (),
    ) -> None:
        self._shape = (subtask_index, parallelism, gate_channels, subpartitions)
        self._open: dict[int, _Open] = {}
        self._results: dict[int, ChannelState] = {}

    def start(self, checkpoint_id: int) -> None:
        for older in [c for c in self._open if c < checkpoint_id]:
            del self._open[older]
        for older in [c for c in self._results if c < checkpoint_id]:
            del self._results[older]
        self._open.setdefault(checkpoint_id, _Open())

    def is_started(self, checkpoint_id: int) -> bool:
        """``start`` was called and the checkpoint was neither aborted nor taken."""
        return checkpoint_id in self._open or checkpoint_id in self._results

    def add_input(self, checkpoint_id: int, channel: InputChannelInfo, data: bytes) -> None:
        entry = self._open.get(checkpoint_id)
        if entry is not None and not entry.input_done and data:
            entry.inputs.setdefault(channel, []).append(data)

    def add_output(self, checkpoint_id: int, channel: SubpartitionInfo, data: bytes) -> None:
        entry = self._open.get(checkpoint_id)
        if entry is not None and not entry.output_done and data:
            entry.outputs.setdefault(channel, []).append(data)

    def finish_input(self, checkpoint_id: int) -> None:
        entry = self._open.get(checkpoint_id)
        if entry is not None:
            entry.input_done = True
            self._maybe_complete(checkpoint_id, entry)

    def finish_output(self, checkpoint_id: int) -> None:
        entry = self._open.get(checkpoint_id)
        if entry is not None:
            entry.output_done = True
            self._maybe_complete(checkpoint_id, entry)

    def abort(self, checkpoint_id: int) -> None:
        """Drop ``checkpoint_id``'s data; its callback never runs."""
        self._open.pop(checkpoint_id, None)
        self._results.pop(checkpoint_id, None)

    def when_finished(
        self,
        checkpoint_id: int,
        callback: Callable[[ChannelStateResult], None],
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Run ``callback(result)`` once both sides of ``checkpoint_id`` finished (at once if
        they already did; the result is then handed over and forgotten). Keeping bytes in
        memory cannot fail, so ``on_failure`` is never called."""
        result = self._results.pop(checkpoint_id, None)
        if result is not None:
            callback(result)
            return
        entry = self._open.get(checkpoint_id)
        if entry is None:
            raise KeyError(f"channel state of checkpoint {checkpoint_id} was not started")
        entry.callback = callback

    def _maybe_complete(self, checkpoint_id: int, entry: _Open) -> None:
        if not (entry.input_done and entry.output_done):
            return
        del self._open[checkpoint_id]
        subtask, parallelism, gates, subpartitions = self._shape
        result = ChannelState(
            checkpoint_id, subtask, parallelism, gates, subpartitions,
            {ch: tuple(chunks) for ch, chunks in entry.inputs.items()},
            {ch: tuple(chunks) for ch, chunks in entry.outputs.items()},
        )  # fmt: skip
        if entry.callback is not None:
            entry.callback(result)
        else:
            self._results[checkpoint_id] = result
