"""Drives a global-committing sink by hand, as the runtime would, with crashes in between.

:class:`Attempt` is one run of the sink's operators: ``parallelism`` writer operators and one
global committer operator, wired directly (the writers' emitted ``CommittableMessage`` s go to
the committer's input, as they would over the aligned GLOBAL edge). ``checkpoint(n)`` runs the
writers' pre-barrier step and then the committer's snapshot (alignment: every message for
``n`` precedes the committer's barrier) and returns the committer's state; ``complete(n)``
delivers the notification. A crash is dropping the attempt (``close`` as after a failure) and
starting a new one restored from the state of the last completed checkpoint.
"""

from __future__ import annotations

from typing import Any

from undertow.core.config import Configuration
from undertow.runtime.task.global_committer_operator import GlobalCommitterOperator
from undertow.runtime.task.operator import OperatorSetup
from undertow.runtime.task.sink_operator import SinkWriterOperator


class _ListOutput:
    def __init__(self) -> None:
        self.records: list[Any] = []

    def collect_batch(self, values: list[Any], timestamps: Any) -> None:
        self.records.extend(values)

    def emit_watermark(self, watermark: int) -> None:
        pass

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None) -> None:
        raise AssertionError("no side outputs here")

    def emit_watermark_status(self, idle: bool) -> None:
        pass


def _setup(name: str, uid: str, subtask: int, parallelism: int, attempt: int) -> OperatorSetup:
    return OperatorSetup(name=name, uid=uid, subtask_index=subtask, parallelism=parallelism,
                         max_parallelism=128, attempt_number=attempt, output=_ListOutput(),
                         config=Configuration(), processing_time_service=None)  # type: ignore[arg-type]  # fmt: skip


class Attempt:
    def __init__(
        self, sink: Any, parallelism: int, attempt: int = 0, restored: bytes | None = None
    ) -> None:
        self.writers = []
        for s in range(parallelism):
            op = SinkWriterOperator(sink, emit_committables=True)
            op.setup(_setup("Sink: Writer", "sink", s, parallelism, attempt))
            self.writers.append(op)
        self.committer = GlobalCommitterOperator(sink)
        self.committer.setup(_setup("Sink: Committer", "sink-committer", 0, 1, attempt))
        if restored is not None:
            self.committer.restore_custom_state([restored], rescaled=False)
        self.committer.open()
        for w in self.writers:
            w.open()

    def _forward(self) -> None:
        for w in self.writers:
            out = w.output
            assert isinstance(out, _ListOutput)
            if out.records:
                self.committer.process_batch(out.records, None)
                out.records = []

    def write(self, subtask: int, records: list[Any]) -> None:
        self.writers[subtask].process_batch(records, None)

    def checkpoint(self, checkpoint_id: int) -> bytes:
        for w in self.writers:
            w.prepare_snapshot_pre_barrier(checkpoint_id)
        self._forward()
        state = self.committer.snapshot_custom_state(checkpoint_id)
        assert state is not None
        return state

    def complete(self, checkpoint_id: int) -> None:
        self.committer.notify_checkpoint_complete(checkpoint_id)

    def finish(self) -> None:
        for w in self.writers:
            w.finish()
        self._forward()
        self.committer.finish()
        self.close()

    def close(self) -> None:
        for w in self.writers:
            w.close()
        self.committer.close()
