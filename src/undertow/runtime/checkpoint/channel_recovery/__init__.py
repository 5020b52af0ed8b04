"""Recovery of channel state (unaligned checkpoints), from the restore plan to the input.

One home, four steps behind this package's interface (the runtime calls only these names):
1. driver, pure: :func:`plan_channel_recovery` decides what each new subtask restores in place
   and which old channels a producer re-emits after a rescale (:mod:`.plan`, :mod:`.rescale`);
2. worker, I/O pool: :meth:`WorkerChannelRecovery.read` reads and checks it (:mod:`.reader`);
   restored input and output become lazy per-channel streams whose unconsumed rest a
   checkpoint during recovery refers to instead of writing it again (:mod:`.stream`);
3. task, before ``open``: :func:`restore_in_place` and :func:`reemit` put it back (:mod:`.feed`);
4. consumer: :class:`UpstreamRecoveryTracker` resumes a gate once its re-emitted data ended;
   :class:`RecoveryCountdown` tells the JobMaster once everything the subtask must consume
   before checkpoints may be triggered was consumed.
During recovery (FLIP-547): docs/design.md, "Channel recovery in one home".
"""

from __future__ import annotations

from undertow.runtime.checkpoint.channel_recovery.feed import (
    ReemittedChannel,
    SubtaskChannelRecovery,
    reemit,
    restore_in_place,
)
from undertow.runtime.checkpoint.channel_recovery.plan import (
    ChannelRecoveryPlan,
    in_place_input_subtasks,
    plan_channel_recovery,
)
from undertow.runtime.checkpoint.channel_recovery.reader import WorkerChannelRecovery
from undertow.runtime.checkpoint.channel_recovery.rescale import EndOfChannelStateEvent
from undertow.runtime.checkpoint.channel_recovery.upstream import (
    RecoveryCountdown,
    UpstreamRecoveryTracker,
)

__all__ = [
    "ChannelRecoveryPlan",
    "EndOfChannelStateEvent",
    "RecoveryCountdown",
    "ReemittedChannel",
    "SubtaskChannelRecovery",
    "UpstreamRecoveryTracker",
    "WorkerChannelRecovery",
    "in_place_input_subtasks",
    "plan_channel_recovery",
    "reemit",
    "restore_in_place",
]  # fmt: skip
