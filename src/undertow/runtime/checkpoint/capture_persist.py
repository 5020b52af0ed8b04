"""Executes the in-flight capture's decisions (:mod:`.inflight_capture`) with a subtask's
channel-state writer: chunks are written; a run of an older checkpoint's file is referred to
where the decision allows it, the run can be referred to, and the writer can refer
(:class:`.ReferencesChannelState`), else its chunks are written again
(docs/unaligned-and-debloating.md says when). Queued buffers the previous completed checkpoint
persisted are referred to in its file the same way (:class:`ReferInput`, :class:`ReferOutput`),
and the ``ledger`` (:mod:`.inflight_ledger`) learns of every chunk in the writer's order.

Threading: the subtask's loop thread, decisions in the order the capture made them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from undertow.runtime.checkpoint.channel_state_handles import ChannelStateDirection
from undertow.runtime.checkpoint.channel_state_writer import (
    ChannelStateWriter,
    ReferencesChannelState,
    encode_chunk,
)
from undertow.runtime.checkpoint.inflight_capture import (
    CaptureDecision,
    FinishInput,
    FinishOutput,
    PersistInput,
    PersistInputRun,
    PersistOutput,
    PersistOutputRun,
    ReferInput,
    ReferOutput,
    ScheduleOutputTimeout,
    StartChannelState,
)
from undertow.runtime.checkpoint.inflight_ledger import InflightLedger, reference


def persist(
    writer: ChannelStateWriter,
    decisions: Iterable[CaptureDecision | None],
    schedule_output_timeout: Callable[[int, int], None],
    ledger: InflightLedger | None = None,
) -> None:
    """Execute ``decisions`` with ``writer``; a :class:`ScheduleOutputTimeout` goes to
    ``schedule_output_timeout(checkpoint_id, delay_ms)``."""
    ledger = ledger if ledger is not None else InflightLedger(enabled=False)
    for decision in decisions:
        match decision:
            case PersistInput(cid, channel, chunk, source) | PersistOutput(
                cid, channel, chunk, source
            ):
                side = _side(decision)
                _add(writer, side)(cid, channel, chunk)
                ledger.written(cid, side, channel, source)
            case PersistInputRun(cid, channel, run, refer) | PersistOutputRun(
                cid, channel, run, refer
            ):
                side = _side(decision)
                if refer and run.referencable and isinstance(writer, ReferencesChannelState):
                    _add_reference(writer, side)(cid, channel, run.reference)
                else:
                    for chunk in run.chunks():
                        _add(writer, side)(cid, channel, chunk)
                        ledger.written(cid, side, channel, None)
            case ReferInput(cid, channel, buffers, locations) | ReferOutput(
                cid, channel, buffers, locations
            ):
                side = _side(decision)
                if isinstance(writer, ReferencesChannelState):
                    _add_reference(writer, side)(cid, channel, reference(channel, list(locations)))
                    ledger.referred(cid, side, list(buffers), list(locations))
                else:
                    for buffer in buffers:
                        _add(writer, side)(cid, channel, encode_chunk(buffer))
                        ledger.written(cid, side, channel, buffer)
            case StartChannelState(cid):
                writer.start(cid)
            case FinishInput(cid):
                writer.finish_input(cid)
            case FinishOutput(cid):
                writer.finish_output(cid)
            case ScheduleOutputTimeout(cid, delay_ms):
                schedule_output_timeout(cid, delay_ms)
            case None:
                pass


_INPUT_DECISIONS = (PersistInput, PersistInputRun, ReferInput)


def _side(decision: CaptureDecision) -> ChannelStateDirection:
    """Which side of the subtask's channel state a persist or refer decision is for."""
    if isinstance(decision, _INPUT_DECISIONS):
        return ChannelStateDirection.INPUT
    return ChannelStateDirection.OUTPUT


def _add(writer: ChannelStateWriter, side: ChannelStateDirection) -> Callable[..., None]:
    return writer.add_input if side is ChannelStateDirection.INPUT else writer.add_output


def _add_reference(
    writer: ReferencesChannelState, side: ChannelStateDirection
) -> Callable[..., None]:
    if side is ChannelStateDirection.INPUT:
        return writer.add_input_reference
    return writer.add_output_reference
