"""The barrier handler's state interface, its channel bookkeeping, and the aligned-only states.

A state is an immutable object; every event returns the next state (reference §1.5). States
decide what happens to the channels and speak to the handler only through :class:`Controller`,
whose calls the handler turns into actions (:mod:`.barrier_actions`). The handler keeps the
per-checkpoint bookkeeping (§1.4) and counts a barrier or end of partition as "aligned" *before*
it calls the state, so ``controller.all_barriers_received()`` already includes the event.

The alternating states live in :mod:`.alternating_states`.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.checkpoint.barrier_actions import BarrierProtocolViolation


class Controller(Protocol):
    """What a state may ask of the handler and tell it to do (Flink's ``Controller``).

    Every call that does something appends an action to the current event's action list.
    """

    @property
    def pending_checkpoint_barrier(self) -> CheckpointBarrier | None:
        """The first barrier (or announced barrier) of the pending checkpoint."""

    def all_barriers_received(self) -> bool:
        """Every channel open at the pending checkpoint's start delivered barrier or end."""

    def trigger_global_checkpoint(self, barrier: CheckpointBarrier) -> None:
        """Emit ``TriggerCheckpoint(barrier)``."""

    def resume_consumption(self, channels: Iterable[int]) -> None:
        """Emit ``ResumeChannels`` for ``channels`` (nothing if empty)."""

    def init_inputs_checkpoint(self, barrier: CheckpointBarrier) -> None:
        """Emit ``InitInputsCheckpoint``; if unaligned, the open channels start their capture."""

    def checkpoint_started(self, barrier: CheckpointBarrier) -> None:
        """The inputs learn of the unaligned checkpoint: channels whose barrier is already in
        stop capturing at once (``ChannelBarrierReceived``)."""

    def channel_barrier_received(self, channel: int) -> None:
        """``channel`` delivered its barrier or end: emit ``ChannelBarrierReceived`` once if it
        is still capturing input for the pending checkpoint."""

    def convert_to_priority(self, channel: int, sequence_number: int) -> None:
        """Emit ``ConvertToPriority(channel, sequence_number)``."""

    def is_timed_out(self, barrier: CheckpointBarrier) -> bool:
        """``barrier`` is timeoutable, not newer than the current id, and its alignment timeout
        has passed (``timeout < now - barrier.timestamp``); False without a clock value."""


@dataclass(frozen=True, slots=True)
class AlignmentChannels:
    """The channel bookkeeping carried from state to state (Flink's ``ChannelState``, named
    apart from :class:`~.snapshot.ChannelState`, the persisted in-flight data).

    ``blocked``: channels whose aligned barrier was processed; their upstream waits for a resume.
    ``announced``: (channel, sequence number) of barriers announced but not yet processed,
    ascending by channel; only the alternating aligned states fill it.
    """

    blocked: frozenset[int] = frozenset()
    announced: tuple[tuple[int, int], ...] = ()

    def block_channel(self, channel: int) -> AlignmentChannels:
        return replace(self, blocked=self.blocked | {channel})

    def unblock_all_channels(self, controller: Controller) -> AlignmentChannels:
        controller.resume_consumption(self.blocked)
        return replace(self, blocked=frozenset())

    def channel_finished(self, channel: int) -> AlignmentChannels:
        return replace(self, blocked=self.blocked - {channel}, announced=self._without(channel))

    def add_seen_announcement(self, channel: int, sequence_number: int) -> AlignmentChannels:
        return replace(
            self, announced=tuple(sorted((*self._without(channel), (channel, sequence_number))))
        )

    def remove_seen_announcement(self, channel: int) -> AlignmentChannels:
        return replace(self, announced=self._without(channel))

    def prioritize_all_announcements(self, controller: Controller) -> AlignmentChannels:
        for channel, sequence_number in self.announced:
            controller.convert_to_priority(channel, sequence_number)
        return replace(self, announced=())

    def empty_state(self) -> AlignmentChannels:
        assert not self.blocked, f"resetting channel state with blocked channels {self.blocked}"
        return AlignmentChannels()

    def _without(self, channel: int) -> tuple[tuple[int, int], ...]:
        return tuple(entry for entry in self.announced if entry[0] != channel)


class BarrierHandlerState(ABC):
    """One state of the handler: immutable; every event returns the next state."""

    __slots__ = ()

    #: The channel bookkeeping this state carries (a dataclass field of every concrete state).
    channel_state: AlignmentChannels

    @abstractmethod
    def barrier_received(
        self,
        controller: Controller,
        channel: int,
        barrier: CheckpointBarrier,
        mark_blocked: bool = True,
    ) -> BarrierHandlerState:
        """A barrier of the pending checkpoint arrived on ``channel`` (already counted).

        ``mark_blocked``: the barrier came through the network, whose upstream blocked itself
        if the barrier is aligned (False for barriers of source inputs, triggered by RPC).
        """

    @abstractmethod
    def announcement_received(
        self, controller: Controller, channel: int, sequence_number: int
    ) -> BarrierHandlerState:
        """The pending checkpoint's barrier is queued on ``channel`` at ``sequence_number``."""

    @abstractmethod
    def aligned_checkpoint_timeout(
        self, controller: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        """The alignment of the pending checkpoint (first barrier ``barrier``) timed out."""

    @abstractmethod
    def end_of_partition_received(
        self, controller: Controller, channel: int
    ) -> BarrierHandlerState:
        """``channel`` finished; if a checkpoint is pending it counted as its barrier."""

    @abstractmethod
    def abort(self, controller: Controller, checkpoint_id: int) -> BarrierHandlerState:
        """The pending checkpoint (or a newer one) was aborted."""


class AbstractAlignedBarrierHandlerState(BarrierHandlerState):
    """Shared behaviour of the aligned states: block on each barrier, trigger on the last one."""

    __slots__ = ()

    def barrier_received(
        self,
        controller: Controller,
        channel: int,
        barrier: CheckpointBarrier,
        mark_blocked: bool = True,
    ) -> BarrierHandlerState:
        if not barrier.options.needs_alignment:
            raise BarrierProtocolViolation(
                f"aligned barrier handler got a {barrier.options.alignment.name} barrier of "
                f"checkpoint {barrier.checkpoint_id} on channel {channel}"
            )
        channels = self.channel_state
        if mark_blocked:
            channels = channels.block_channel(channel)
        if controller.all_barriers_received():
            return _trigger_global_checkpoint(controller, channels, barrier)
        return CollectingBarriers(channels)

    def announcement_received(
        self, controller: Controller, channel: int, sequence_number: int
    ) -> BarrierHandlerState:
        return self

    def aligned_checkpoint_timeout(
        self, controller: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        raise BarrierProtocolViolation(
            f"alignment of checkpoint {barrier.checkpoint_id} timed out, but this handler is "
            "aligned-only and schedules no alignment timer"
        )

    def end_of_partition_received(
        self, controller: Controller, channel: int
    ) -> BarrierHandlerState:
        channels = self.channel_state.channel_finished(channel)
        if controller.all_barriers_received():
            barrier = controller.pending_checkpoint_barrier
            assert barrier is not None, "all barriers received without a pending barrier"
            return _trigger_global_checkpoint(controller, channels, barrier)
        return self._with_channel_state(channels)

    def abort(self, controller: Controller, checkpoint_id: int) -> BarrierHandlerState:
        return WaitingForFirstBarrier(self.channel_state.unblock_all_channels(controller))

    @abstractmethod
    def _with_channel_state(self, channels: AlignmentChannels) -> BarrierHandlerState: ...


def _trigger_global_checkpoint(
    controller: Controller, channels: AlignmentChannels, barrier: CheckpointBarrier
) -> BarrierHandlerState:
    controller.trigger_global_checkpoint(barrier)
    return WaitingForFirstBarrier(channels.unblock_all_channels(controller))


@dataclass(frozen=True, slots=True)
class WaitingForFirstBarrier(AbstractAlignedBarrierHandlerState):
    """No checkpoint is being aligned; no channel is blocked."""

    channel_state: AlignmentChannels = AlignmentChannels()

    def _with_channel_state(self, channels: AlignmentChannels) -> BarrierHandlerState:
        return WaitingForFirstBarrier(channels)


@dataclass(frozen=True, slots=True)
class CollectingBarriers(AbstractAlignedBarrierHandlerState):
    """Some barriers of the pending checkpoint are in; their channels are blocked."""

    channel_state: AlignmentChannels

    def _with_channel_state(self, channels: AlignmentChannels) -> BarrierHandlerState:
        return CollectingBarriers(channels)
