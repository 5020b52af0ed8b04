"""The alternating barrier-handler states: unaligned checkpoints, and aligned ones that switch
to unaligned when their alignment times out (reference §1.5, Flink's ``Alternating*`` classes).

(AWFB = AlternatingWaitingForFirstBarrier, ACB = AlternatingCollectingBarriers, AWFBU / ACBU =
their ``...Unaligned`` siblings.)

Invariants: an aligned checkpoint is triggered on its last barrier, an unaligned one on its first
barrier (or at the timeout, if a barrier is already in), each at most once; channels blocked
while aligning stay blocked through the switch to unaligned, until every barrier is in or the
checkpoint is aborted, and are then resumed together; in the unaligned states every open
channel captures its input from "init" until its own barrier or end of partition. The waiting
states carry no blocked channels; the unaligned states carry no announcements.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field

from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.checkpoint.barrier_actions import BarrierProtocolViolation
from undertow.runtime.checkpoint.barrier_states import (
    AlignmentChannels,
    BarrierHandlerState,
    Controller,
)


def _blocks(barrier: CheckpointBarrier, mark_blocked: bool) -> bool:
    """An aligned barrier from the network left its upstream blocked."""
    return mark_blocked and barrier.options.needs_alignment


class _AbstractAlternatingAlignedState(BarrierHandlerState):
    """AWFB and ACB: align like the aligned handler, but switch to unaligned when asked."""

    __slots__ = ()

    def announcement_received(
        self, controller: Controller, channel: int, sequence_number: int
    ) -> BarrierHandlerState:
        return self._with(self.channel_state.add_seen_announcement(channel, sequence_number))

    def barrier_received(
        self,
        controller: Controller,
        channel: int,
        barrier: CheckpointBarrier,
        mark_blocked: bool = True,
    ) -> BarrierHandlerState:
        if barrier.options.is_unaligned:  # the upstream already switched (reference §1.9)
            unaligned = self.aligned_checkpoint_timeout(controller, barrier)
            return unaligned.barrier_received(controller, channel, barrier, mark_blocked)
        if not barrier.options.needs_alignment:
            raise BarrierProtocolViolation(
                f"exactly-once barrier handler got an {barrier.options.alignment.name} barrier "
                f"of checkpoint {barrier.checkpoint_id} on channel {channel}"
            )
        channels = self.channel_state.remove_seen_announcement(channel)
        if mark_blocked:
            channels = channels.block_channel(channel)
        if controller.all_barriers_received():
            controller.init_inputs_checkpoint(barrier)
            controller.trigger_global_checkpoint(barrier)
            return _finish_alternating(controller, channels)
        if controller.is_timed_out(barrier):
            unaligned = self._with(channels).aligned_checkpoint_timeout(controller, barrier)
            return unaligned.barrier_received(controller, channel, barrier.as_unaligned(), False)
        return AlternatingCollectingBarriers(channels)

    def abort(self, controller: Controller, checkpoint_id: int) -> BarrierHandlerState:
        return _finish_alternating(controller, self.channel_state)

    @abstractmethod
    def _with(self, channels: AlignmentChannels) -> BarrierHandlerState: ...


@dataclass(frozen=True, slots=True)
class AlternatingWaitingForFirstBarrier(_AbstractAlternatingAlignedState):
    """No barrier of a pending checkpoint processed yet; announcements may be remembered."""

    channel_state: AlignmentChannels = field(default_factory=AlignmentChannels)

    def aligned_checkpoint_timeout(
        self, controller: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        channels = self.channel_state.prioritize_all_announcements(controller)
        return AlternatingWaitingForFirstBarrierUnaligned(True, channels)

    def end_of_partition_received(
        self, controller: Controller, channel: int
    ) -> BarrierHandlerState:
        # No barrier is in: a pending checkpoint was announced on another channel, whose barrier
        # precedes that channel's end of partition, so this cannot complete it.
        return AlternatingWaitingForFirstBarrier(self.channel_state.channel_finished(channel))

    def _with(self, channels: AlignmentChannels) -> BarrierHandlerState:
        return AlternatingWaitingForFirstBarrier(channels)


@dataclass(frozen=True, slots=True)
class AlternatingCollectingBarriers(_AbstractAlternatingAlignedState):
    """Aligning: some barriers are in, their channels blocked; the timeout has not fired."""

    channel_state: AlignmentChannels

    def aligned_checkpoint_timeout(
        self, controller: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        channels = self.channel_state.prioritize_all_announcements(controller)
        unaligned = barrier.as_unaligned()
        controller.init_inputs_checkpoint(unaligned)
        controller.checkpoint_started(unaligned)
        controller.trigger_global_checkpoint(unaligned)
        return AlternatingCollectingBarriersUnaligned(True, channels)

    def end_of_partition_received(
        self, controller: Controller, channel: int
    ) -> BarrierHandlerState:
        channels = self.channel_state.channel_finished(channel)
        barrier = controller.pending_checkpoint_barrier
        assert barrier is not None, "collecting barriers without a pending barrier"
        if controller.all_barriers_received():
            controller.init_inputs_checkpoint(barrier)
            controller.trigger_global_checkpoint(barrier)
            return _finish_alternating(controller, channels)
        if controller.is_timed_out(barrier):
            unaligned = self._with(channels).aligned_checkpoint_timeout(controller, barrier)
            return unaligned.end_of_partition_received(controller, channel)
        return AlternatingCollectingBarriers(channels)

    def _with(self, channels: AlignmentChannels) -> BarrierHandlerState:
        return AlternatingCollectingBarriers(channels)


def _finish_alternating(controller: Controller, channels: AlignmentChannels) -> BarrierHandlerState:
    return AlternatingWaitingForFirstBarrier(
        channels.unblock_all_channels(controller).empty_state()
    )


class _AbstractAlternatingUnalignedState(BarrierHandlerState):
    """Shared by the unaligned states: announced barriers go to the head of their channel at
    once, and the alignment timeout has nothing left to do."""

    __slots__ = ()

    def announcement_received(
        self, controller: Controller, channel: int, sequence_number: int
    ) -> BarrierHandlerState:
        controller.convert_to_priority(channel, sequence_number)
        return self

    def aligned_checkpoint_timeout(
        self, controller: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        return self


@dataclass(frozen=True, slots=True)
class AlternatingWaitingForFirstBarrierUnaligned(_AbstractAlternatingUnalignedState):
    """The next checkpoint is unaligned; its first barrier triggers it.

    ``alternating``: return to :class:`AlternatingWaitingForFirstBarrier` when the checkpoint
    ends (the alternating handler after a timeout) rather than stay unaligned (pure unaligned).
    """

    alternating: bool = False
    channel_state: AlignmentChannels = field(default_factory=AlignmentChannels)

    def barrier_received(
        self,
        controller: Controller,
        channel: int,
        barrier: CheckpointBarrier,
        mark_blocked: bool = True,
    ) -> BarrierHandlerState:
        channels = self.channel_state
        if _blocks(barrier, mark_blocked):  # its upstream blocked itself all the same
            channels = channels.block_channel(channel)
        unaligned = barrier.as_unaligned()
        controller.init_inputs_checkpoint(unaligned)
        controller.checkpoint_started(unaligned)
        controller.trigger_global_checkpoint(unaligned)
        if controller.all_barriers_received():
            return _finish_unaligned(controller, self.alternating, channels)
        return AlternatingCollectingBarriersUnaligned(self.alternating, channels)

    def end_of_partition_received(
        self, controller: Controller, channel: int
    ) -> BarrierHandlerState:
        return AlternatingWaitingForFirstBarrierUnaligned(
            self.alternating, self.channel_state.channel_finished(channel)
        )

    def abort(self, controller: Controller, checkpoint_id: int) -> BarrierHandlerState:
        return _finish_unaligned(controller, self.alternating, self.channel_state)


@dataclass(frozen=True, slots=True)
class AlternatingCollectingBarriersUnaligned(_AbstractAlternatingUnalignedState):
    """The unaligned checkpoint is triggered; its channel state is captured until all barriers
    are in. Channels blocked by aligned barriers stay blocked until then."""

    alternating: bool
    channel_state: AlignmentChannels

    def barrier_received(
        self,
        controller: Controller,
        channel: int,
        barrier: CheckpointBarrier,
        mark_blocked: bool = True,
    ) -> BarrierHandlerState:
        channels = self.channel_state
        if _blocks(barrier, mark_blocked):
            channels = channels.block_channel(channel)
        controller.channel_barrier_received(channel)
        if controller.all_barriers_received():
            return _finish_unaligned(controller, self.alternating, channels)
        return AlternatingCollectingBarriersUnaligned(self.alternating, channels)

    def end_of_partition_received(
        self, controller: Controller, channel: int
    ) -> BarrierHandlerState:
        channels = self.channel_state.channel_finished(channel)
        controller.channel_barrier_received(channel)
        if controller.all_barriers_received():
            return _finish_unaligned(controller, self.alternating, channels)
        return AlternatingCollectingBarriersUnaligned(self.alternating, channels)

    def abort(self, controller: Controller, checkpoint_id: int) -> BarrierHandlerState:
        return _finish_unaligned(controller, self.alternating, self.channel_state)


def _finish_unaligned(
    controller: Controller, alternating: bool, channels: AlignmentChannels
) -> BarrierHandlerState:
    empty = channels.unblock_all_channels(controller).empty_state()
    if alternating:
        return AlternatingWaitingForFirstBarrier(empty)
    return AlternatingWaitingForFirstBarrierUnaligned(False, empty)
