"""The operator behind ``sink_to(Sink)``: drives the sink's writer and committer."""

from __future__ import annotations

from typing import Any

from undertow.connectors.sink import Committer, Sink, SinkWriter, SinkWriterContext
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps


class _WriterContext(SinkWriterContext):
    def __init__(self, op: SinkWriterOperator) -> None:
        self._op = op

    def subtask_index(self) -> int:
        return self._op.ctx.subtask_index

    def parallelism(self) -> int:
        return self._op.ctx.parallelism

    def attempt_number(self) -> int:
        return self._op.ctx.attempt_number


class SinkWriterOperator(OneInputStreamOperator):
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.writer: SinkWriter | None = None
        self.committer: Committer | None = None

    def open(self) -> None:
        self.writer = self.sink.create_writer(_WriterContext(self))
        self.committer = self.sink.create_committer()

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        assert self.writer is not None
        self.writer.write_batch(values, timestamps)

    def finish(self) -> None:
        assert self.writer is not None
        self.writer.flush(True)
        committables = self.writer.prepare_commit()
        if self.committer is not None and committables:
            self.committer.commit(committables)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.committer is not None:
            self.committer.close()
