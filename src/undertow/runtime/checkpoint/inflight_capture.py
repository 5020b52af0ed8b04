"""Which in-flight data one subtask persists for an unaligned checkpoint: typed decisions.

Pure (no I/O, no writer): the checkpointer executes the decisions with its
``ChannelStateWriter``; the network offers views only (:mod:`..network.inflight_view`).
Input side: per channel, what the task has not processed, the deserializer's partial record,
what is left of its restored input (runs of older files, referred to by a checkpoint rather than
written again: FLIP-76), the buffers queued ahead of the cut, then every buffer that arrives
until the channel's barrier. Output side: the buffers the barrier overtakes as a priority event,
or when the aligned-checkpoint timeout (or the bytes queued ahead, :mod:`.inflight_switch`)
turns it.

Invariants: a checkpoint's output side is finished exactly once after it began; nothing is
recorded on a channel after its barrier arrived or its checkpoint was forgotten.
Threading: the task's loop thread only. The story: docs/design.md, "Unaligned checkpoints".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.checkpoint.channel_recovery.stream import RestItem, RestoredRun
from undertow.runtime.checkpoint.channel_state_handles import ChannelStateDirection
from undertow.runtime.checkpoint.channel_state_writer import encode_chunk
from undertow.runtime.checkpoint.inflight_ledger import ChunkLocation
from undertow.runtime.checkpoint.inflight_switch import (
    StayAligned,
    SwitchToUnaligned,
    decide_switch,
)
from undertow.runtime.checkpoint.snapshot import InputChannelInfo, SubpartitionInfo
from undertow.runtime.network.buffer import Buffer
from undertow.runtime.network.inflight_view import InflightInputView


@dataclass(frozen=True, slots=True)
class StartChannelState:
    """Open ``checkpoint_id`` in the channel-state writer."""

    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class PersistInput:
    """Add ``chunk`` (an encoded network buffer) to the input state of ``channel``;
    ``source``: the queued buffer it encodes, if it is one (incremental channel state
    remembers where it was written)."""

    checkpoint_id: int
    channel: InputChannelInfo
    chunk: bytes
    source: Buffer | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class PersistInputRun:
    """Add what is left of a restored run to the input state of ``channel``: as a reference
    to the older file when ``refer`` (and the writer can), else its chunks read and written
    again (a savepoint is self-contained: ``refer`` is false)."""

    checkpoint_id: int
    channel: InputChannelInfo
    run: RestoredRun
    refer: bool


@dataclass(frozen=True, slots=True)
class PersistOutput:
    """Add ``chunk`` to the output state of subpartition ``channel`` (``source`` as for
    :class:`PersistInput`)."""

    checkpoint_id: int
    channel: SubpartitionInfo
    chunk: bytes
    source: Buffer | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ReferInput:
    """Queued ``buffers`` of input ``channel`` that the previous completed checkpoint
    persisted at ``run`` (consecutive chunks of one region): referred to there when the
    writer can, else written again (incremental channel state, :mod:`.inflight_ledger`)."""

    checkpoint_id: int
    channel: InputChannelInfo
    buffers: tuple[Buffer, ...]
    run: tuple[ChunkLocation, ...]


@dataclass(frozen=True, slots=True)
class ReferOutput:
    """As :class:`ReferInput`, for buffers still queued in subpartition ``channel``."""

    checkpoint_id: int
    channel: SubpartitionInfo
    buffers: tuple[Buffer, ...]
    run: tuple[ChunkLocation, ...]


@dataclass(frozen=True, slots=True)
class PersistOutputRun:
    """Add what is left of a restored output run to the output state of subpartition
    ``channel``: referred to when ``refer`` (and the writer can), else written again."""

    checkpoint_id: int
    channel: SubpartitionInfo
    run: RestoredRun
    refer: bool


@dataclass(frozen=True, slots=True)
class FinishInput:
    """The input side of ``checkpoint_id`` is complete."""

    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class FinishOutput:
    """The output side of ``checkpoint_id`` is complete."""

    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class ScheduleOutputTimeout:
    """Call :meth:`InflightCapture.output_timeout` for ``checkpoint_id`` after ``delay_ms``."""

    checkpoint_id: int
    delay_ms: int


#: Every decision the capture returns.
CaptureDecision: TypeAlias = (
    StartChannelState | PersistInput | PersistInputRun | PersistOutput | PersistOutputRun
    | ReferInput | ReferOutput | FinishInput | FinishOutput | ScheduleOutputTimeout
)  # fmt: skip

#: Where a queued buffer was persisted, if checkpoint ``checkpoint_id`` may refer to it
#: (``InflightLedger.locate``); ``None``: write it.
Locate: TypeAlias = Callable[[int, ChannelStateDirection, Buffer], ChunkLocation | None]


def _no_location(
    checkpoint_id: int, side: ChannelStateDirection, buffer: Buffer
) -> ChunkLocation | None:
    return None


@dataclass(frozen=True, slots=True)
class OutputTimeout:
    """The timeoutable barrier is still queued in ``subpartitions``: replace it there by
    ``replacement`` (its unaligned form) and persist what it overtakes."""

    checkpoint_id: int
    barrier: CheckpointBarrier
    replacement: CheckpointBarrier
    subpartitions: tuple[SubpartitionInfo, ...]


class OpenCheckpoints(Protocol):
    """Which checkpoints the channel-state writer still collects (a ``ChannelStateWriter``
    answers it; it may abort one on its own, e.g. when its group moved past it)."""

    def is_started(self, checkpoint_id: int) -> bool: ...


class InflightCapture:
    """The capture state of one subtask (see the module docstring).

    ``inputs`` names the subtask's input channels in the checkpointer's order (index ->
    (gate, channel in gate)); ``subpartitions`` the number of subpartitions per output;
    ``locate`` where a queued buffer was persisted already (incremental channel state).
    """

    __slots__ = ("_info", "_inputs_started", "_locate", "_out_barrier", "_out_checkpoint",
                 "_out_pending", "_out_refer", "_recording", "_subpartitions")  # fmt: skip

    def __init__(
        self, inputs: Sequence[InputChannelInfo], subpartitions: Sequence[int],
        locate: Locate = _no_location,
    ) -> None:  # fmt: skip
        self._locate = locate
        self._info = tuple(inputs)
        self._subpartitions = tuple(subpartitions)
        #: Checkpoints whose input side was started (and not yet finished or forgotten).
        self._inputs_started: set[int] = set()
        #: channel index -> checkpoint whose input it records as it arrives.
        self._recording: dict[int, int] = {}
        #: The timeoutable barrier in the outputs, and the subpartitions it has not left.
        self._out_checkpoint: int | None = None
        self._out_barrier: CheckpointBarrier | None = None
        self._out_pending: set[SubpartitionInfo] = set()
        #: Its restored output runs may be referred to (not a savepoint).
        self._out_refer = True

    # -- input side ------------------------------------------------------------------------
    def start_inputs(
        self,
        barrier: CheckpointBarrier,
        channels: Iterable[int],
        views: Sequence[InflightInputView],
        unprocessed: Callable[[int], list[bytes]],
        in_hand: tuple[int, int] | None = None,
        restored: Callable[[int], list[RestItem]] = lambda _: [],
    ) -> list[CaptureDecision]:
        """The barrier handler started ``barrier``'s checkpoint on ``channels`` (indices into
        ``views``): their input state up to now; the rest is recorded as it arrives.
        ``unprocessed(index)`` gives the chunks the task took from a channel and has not
        processed, ``restored(index)`` what is left of its restored input; ``in_hand`` is
        (channel, mark) of a priority barrier the task is processing. Aligned checkpoints
        that cannot time out capture nothing."""
        options = barrier.options
        if not (options.is_unaligned or options.is_timeoutable):
            return []
        cid = barrier.checkpoint_id
        self._inputs_started.add(cid)
        self._recording = {c: k for c, k in self._recording.items() if k > cid}
        # An older checkpoint's output side still open (its aligned barrier queued) is decided
        # now, before this one starts in the writer: starting it would drop the older one there.
        decisions: list[CaptureDecision] = self._finish_older_output(cid)
        decisions.append(StartChannelState(cid))
        refer = not options.snapshot_type.is_savepoint
        for index in channels:
            info = self._info[index]
            rest = [
                PersistInput(cid, info, item) if isinstance(item, bytes)
                else PersistInputRun(cid, info, item, refer)
                for item in restored(index)
            ]  # fmt: skip
            self._capture_channel(
                index, cid, views[index], unprocessed(index), rest, in_hand, decisions, refer
            )
        return decisions

    def _capture_channel(
        self,
        index: int,
        cid: int,
        view: InflightInputView,
        unprocessed: list[bytes],
        restored_rest: list[PersistInput | PersistInputRun],
        in_hand: tuple[int, int] | None,
        decisions: list[CaptureDecision],
        refer: bool,
    ) -> None:
        info = self._info[index]
        decisions.extend(PersistInput(cid, info, chunk) for chunk in unprocessed)
        partial = view.partial_record()
        if partial:
            decisions.append(PersistInput(cid, info, encode_chunk(Buffer(partial, partial=True))))
        decisions.extend(restored_rest)
        # A barrier of this checkpoint already queued (or in hand) as a priority event: only
        # the entries that arrived before it belong to the checkpoint.
        limit: int | None = in_hand[1] if in_hand is not None and in_hand[0] == index else None
        for entry, mark in view.queued_priority() if limit is None else ():
            if isinstance(entry, CheckpointBarrier) and entry.checkpoint_id >= cid:
                limit = mark
                break
        record = limit is None
        queued: list[Buffer] = []
        for position, entry in enumerate(view.queued_normal()):
            if limit is not None and position >= limit:
                break
            if type(entry) is Buffer:
                queued.append(entry)
            elif isinstance(entry, CheckpointBarrier) and entry.checkpoint_id >= cid:
                record = False  # its barrier is queued in order: nothing after it counts
                break
        locate = self._locate if refer else _no_location
        for buffers, run in _runs(cid, ChannelStateDirection.INPUT, queued, locate):
            if run:
                decisions.append(ReferInput(cid, info, buffers, run))
            else:
                decisions.extend(PersistInput(cid, info, encode_chunk(b), b) for b in buffers)
        if record:
            self._recording[index] = cid

    def on_arrival(
        self, index: int, payload: object, writer: OpenCheckpoints
    ) -> PersistInput | None:
        """A payload arrived on channel ``index`` (before it is queued): the chunk to persist
        if the channel is being recorded. ``writer`` tells whether it still collects that
        checkpoint; once it does not, the channel stops recording. Cost: one dict lookup
        when nothing is recorded (this runs for every buffer that arrives)."""
        cid = self._recording.get(index)
        if cid is None:
            return None
        if type(payload) is Buffer:
            if writer.is_started(cid):
                return PersistInput(cid, self._info[index], encode_chunk(payload), payload)
            del self._recording[index]
        elif isinstance(payload, CheckpointBarrier) and payload.checkpoint_id >= cid:
            del self._recording[index]
        return None

    def barrier_received(self, index: int, checkpoint_id: int) -> None:
        """The handler took ``checkpoint_id``'s barrier from channel ``index``."""
        if self._recording.get(index) == checkpoint_id:
            del self._recording[index]

    def finish_inputs(self, checkpoint_id: int) -> FinishInput | None:
        """Every channel's barrier of ``checkpoint_id`` arrived (or its channel ended)."""
        if checkpoint_id not in self._inputs_started:
            return None
        self._inputs_started.discard(checkpoint_id)
        return FinishInput(checkpoint_id)

    def inputs_started(self, checkpoint_id: int) -> bool:
        """Its input side was started and is not finished or forgotten."""
        return checkpoint_id in self._inputs_started

    # -- output side -----------------------------------------------------------------------
    def begin_output(
        self, own: CheckpointBarrier, per_output: Sequence[CheckpointBarrier], writer_open: bool
    ) -> list[CaptureDecision] | None:
        """The task is about to send ``per_output[i]`` to output ``i`` (``own`` is its
        barrier). ``None`` if this checkpoint needs no channel state; otherwise what to do
        before the barriers go out (``writer_open``: the writer already collects it)."""
        cid = own.checkpoint_id
        needs = cid in self._inputs_started or any(
            b.options.needs_channel_state for b in per_output
        )
        if not needs:
            return None
        # A previous checkpoint's output is decided by now, and is finished before this one
        # starts in the writer (which drops an older unfinished checkpoint when a newer one
        # starts: the subtask would then neither acknowledge nor decline it).
        decisions = self._finish_older_output(cid)
        if not writer_open:
            # No input of this checkpoint is captured.
            decisions += [StartChannelState(cid), FinishInput(cid)]
        self._out_checkpoint, self._out_barrier = cid, own
        self._out_refer = not own.options.snapshot_type.is_savepoint
        self._out_pending = {
            (i, j)
            for i, b in enumerate(per_output)
            if b.options.is_timeoutable
            for j in range(self._subpartitions[i])
        }
        return decisions

    def overtaken(
        self, checkpoint_id: int, channel: SubpartitionInfo,
        buffers: Iterable[Buffer | RestItem],
    ) -> list[PersistOutput | PersistOutputRun | ReferOutput]:  # fmt: skip
        """A priority barrier overtook ``buffers`` in subpartition ``channel``: queued buffers
        (referred to where the previous completed checkpoint persisted them), and while the
        subpartition restores output lazily, the rest of its restored output (encoded chunks,
        and runs of older files referred to unless a savepoint is taken)."""
        decisions: list[PersistOutput | PersistOutputRun | ReferOutput] = []
        locate = self._locate if self._out_refer else _no_location
        queued: list[Buffer] = []
        for item in buffers:
            if type(item) is Buffer:
                queued.append(item)
                continue
            self._output_runs(checkpoint_id, channel, queued, locate, decisions)
            queued = []
            if isinstance(item, bytes):
                decisions.append(PersistOutput(checkpoint_id, channel, item))
            else:
                assert isinstance(item, RestoredRun)
                decisions.append(PersistOutputRun(checkpoint_id, channel, item, self._out_refer))
        self._output_runs(checkpoint_id, channel, queued, locate, decisions)
        return decisions

    @staticmethod
    def _output_runs(
        cid: int, channel: SubpartitionInfo, queued: list[Buffer], locate: Locate,
        decisions: list[PersistOutput | PersistOutputRun | ReferOutput],
    ) -> None:  # fmt: skip
        for group, run in _runs(cid, ChannelStateDirection.OUTPUT, queued, locate):
            if run:
                decisions.append(ReferOutput(cid, channel, group, run))
            else:
                decisions.extend(PersistOutput(cid, channel, encode_chunk(b), b) for b in group)

    def end_output(
        self, checkpoint_id: int, now_ms: int,
        queued_bytes: Callable[[SubpartitionInfo], int] = lambda _: 0,
    ) -> CaptureDecision | None:  # fmt: skip
        """Every output got its barrier: finish now if none is waiting in a subpartition,
        else time the aligned barrier out (measured from its trigger timestamp), at once if
        the data queued ahead of it (``queued_bytes`` per waiting subpartition) is more than
        its options allow (:func:`.inflight_switch.decide_switch`)."""
        if not self._out_pending:
            return self.finish_output()
        barrier = self._out_barrier
        if barrier is None or self._out_checkpoint != checkpoint_id:
            return None  # forgotten meanwhile: no timeout to wait for
        ahead = sum(queued_bytes(channel) for channel in self._out_pending)
        match decide_switch(barrier.options, now_ms - barrier.timestamp, ahead):
            case StayAligned(wait_ms):
                return ScheduleOutputTimeout(checkpoint_id, wait_ms)
            case SwitchToUnaligned():
                return ScheduleOutputTimeout(checkpoint_id, 0)

    def on_event_sent(self, channel: SubpartitionInfo, payload: object) -> FinishOutput | None:
        """Subpartition ``channel`` sent the event ``payload``."""
        if payload is self._out_barrier and channel in self._out_pending:
            self._out_pending.discard(channel)
            if not self._out_pending:
                return self.finish_output()
        return None

    def output_timeout(self, checkpoint_id: int) -> OutputTimeout | None:
        """The aligned-checkpoint timeout of ``checkpoint_id`` fired: where to turn its barrier
        into a priority one (then call :meth:`overtaken` and :meth:`finish_output`)."""
        barrier = self._out_barrier
        if self._out_checkpoint != checkpoint_id or barrier is None:
            return None
        return OutputTimeout(
            checkpoint_id, barrier, barrier.as_unaligned(), tuple(sorted(self._out_pending))
        )

    def _finish_older_output(self, checkpoint_id: int) -> list[CaptureDecision]:
        """Finish the open output side of a checkpoint older than ``checkpoint_id``, if any."""
        open_checkpoint = self._out_checkpoint
        if open_checkpoint is None or open_checkpoint >= checkpoint_id:
            return []
        finished = self.finish_output()
        return [] if finished is None else [finished]

    def finish_output(self) -> FinishOutput | None:
        """End the open output side, if any."""
        cid = self._out_checkpoint
        self._out_checkpoint, self._out_barrier = None, None
        self._out_pending = set()
        return None if cid is None else FinishOutput(cid)

    # -- both ------------------------------------------------------------------------------
    def forget(self, checkpoint_id: int) -> None:
        """Stop capturing ``checkpoint_id`` (aborted); the caller aborts it in the writer."""
        self._inputs_started.discard(checkpoint_id)
        self._recording = {c: k for c, k in self._recording.items() if k != checkpoint_id}
        if self._out_checkpoint == checkpoint_id:
            self._out_checkpoint, self._out_barrier = None, None
            self._out_pending = set()


def _runs(
    cid: int, side: ChannelStateDirection, buffers: list[Buffer], locate: Locate
) -> list[tuple[tuple[Buffer, ...], tuple[ChunkLocation, ...]]]:
    """``buffers`` in order, grouped: runs of buffers persisted at consecutive locations of
    one region (with their locations), and the buffers between them (with ``()``)."""
    groups: list[tuple[tuple[Buffer, ...], tuple[ChunkLocation, ...]]] = []
    fresh: list[Buffer] = []
    run: list[tuple[Buffer, ChunkLocation]] = []

    def close_run() -> None:
        if run:
            groups.append((tuple(b for b, _ in run), tuple(loc for _, loc in run)))
            run.clear()

    for buffer in buffers:
        loc = locate(cid, side, buffer)
        if loc is None:
            close_run()
            fresh.append(buffer)
            continue
        if fresh:
            groups.append((tuple(fresh), ()))
            fresh = []
        if run and not loc.follows(run[-1][1]):
            close_run()
        run.append((buffer, loc))
    close_run()
    if fresh:
        groups.append((tuple(fresh), ()))
    return groups
