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
            case PersistInput(cid, channel, chunk, source):
                writer.add_input(cid, channel, chunk)
                ledger.written(cid, ChannelStateDirection.INPUT, channel, source)
            case PersistInputRun(cid, channel, run, refer):
                if refer and run.referencable and isinstance(writer, ReferencesChannelState):
                    writer.add_input_reference(cid, channel, run.reference)
                else:
                    for chunk in run.chunks():
                        writer.add_input(cid, channel, chunk)
                        ledger.written(cid, ChannelStateDirection.INPUT, channel, None)
            case ReferInput(cid, channel, buffers, locations):
                if isinstance(writer, ReferencesChannelState):
                    writer.add_input_reference(cid, channel, reference(channel, list(locations)))
                    ledger.referred(
                        cid, ChannelStateDirection.INPUT, list(buffers), list(locations)
                    )
                else:
                    for buffer in buffers:
                        writer.add_input(cid, channel, encode_chunk(buffer))
                        ledger.written(cid, ChannelStateDirection.INPUT, channel, buffer)
            case PersistOutput(cid, channel, chunk, source):
                writer.add_output(cid, channel, chunk)
                ledger.written(cid, ChannelStateDirection.OUTPUT, channel, source)
            case PersistOutputRun(cid, channel, run, refer):
                if refer and run.referencable and isinstance(writer, ReferencesChannelState):
                    writer.add_output_reference(cid, channel, run.reference)
                else:
                    for chunk in run.chunks():
                        writer.add_output(cid, channel, chunk)
                        ledger.written(cid, ChannelStateDirection.OUTPUT, channel, None)
            case ReferOutput(cid, channel, buffers, locations):
                if isinstance(writer, ReferencesChannelState):
                    writer.add_output_reference(cid, channel, reference(channel, list(locations)))
                    ledger.referred(
                        cid, ChannelStateDirection.OUTPUT, list(buffers), list(locations)
                    )
                else:
                    for buffer in buffers:
                        writer.add_output(cid, channel, encode_chunk(buffer))
                        ledger.written(cid, ChannelStateDirection.OUTPUT, channel, buffer)
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
