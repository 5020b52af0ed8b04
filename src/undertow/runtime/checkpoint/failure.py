"""Why checkpoints fail (Flink's ``CheckpointFailureReason``) and which failures count.

Only the reasons Flink's ``CheckpointFailureManager`` counts towards
``execution.checkpointing.tolerable-failed-checkpoints`` have ``counts_as_failure`` set
(reference §5.4).
"""

from __future__ import annotations

import enum

from undertow.core.errors import UndertowError


class CheckpointFailureReason(enum.Enum):
    # (message, counts towards tolerable failures)
    PERIODIC_SCHEDULER_SHUTDOWN = ("periodic checkpoint scheduler is shut down", False)
    TOO_MANY_CHECKPOINT_REQUESTS = (
        "the maximum number of queued checkpoint requests exceeded",
        False,
    )
    MINIMUM_TIME_BETWEEN_CHECKPOINTS = (
        "the minimum time between checkpoints is still pending",
        False,
    )
    NOT_ALL_REQUIRED_TASKS_RUNNING = ("not all required tasks are currently running", False)
    IO_EXCEPTION = ("an exception occurred while writing the checkpoint", True)
    CHECKPOINT_ASYNC_EXCEPTION = ("asynchronous task checkpoint failed", True)
    CHANNEL_STATE_SHARED_STREAM_EXCEPTION = ("the channel state shared stream failed", False)
    CHECKPOINT_EXPIRED = ("checkpoint expired before completing", True)
    CHECKPOINT_SUBSUMED = ("checkpoint has been subsumed", False)
    CHECKPOINT_DECLINED = ("checkpoint was declined", True)
    CHECKPOINT_DECLINED_TASK_NOT_READY = ("checkpoint was declined (tasks not ready)", False)
    CHECKPOINT_DECLINED_TASK_CLOSING = ("checkpoint was declined (task is closing)", False)
    CHECKPOINT_DECLINED_SUBSUMED = (
        "checkpoint was canceled because a barrier of a later checkpoint arrived",
        False,
    )
    CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER = (
        "task received cancellation from one of its inputs",
        False,
    )
    CHECKPOINT_DECLINED_INPUT_END_OF_STREAM = (
        "checkpoint was declined because one input stream is finished",
        False,
    )
    CHECKPOINT_COORDINATOR_SHUTDOWN = ("checkpoint coordinator is shut down", False)
    CHECKPOINT_COORDINATOR_SUSPEND = ("checkpoint coordinator is suspending", False)
    JOB_FAILOVER_REGION = ("failover of the job", False)
    TASK_FAILURE = ("task failure", False)
    TASK_CHECKPOINT_FAILURE = ("task local checkpoint failure", False)
    FINALIZE_CHECKPOINT_FAILURE = ("failure to finalize checkpoint", True)
    TRIGGER_CHECKPOINT_FAILURE = ("trigger checkpoint failure", False)

    def __init__(self, message: str, counts: bool) -> None:
        self.message = message
        self.counts_as_failure = counts


class CheckpointException(UndertowError):
    """A checkpoint failed; ``reason`` says why, the message says where (operator, subtask)."""

    def __init__(self, reason: CheckpointFailureReason, detail: str = "") -> None:
        super().__init__(f"{reason.message}" + (f": {detail}" if detail else ""))
        self.reason = reason
