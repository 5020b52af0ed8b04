"""The sink operator's routing of its state after a rescale: an entry that says its subtask
(:class:`OwnedBySubtask`) goes by it, any other with the subtask that snapshotted it. And what
it tells and asks of its sink: the writer context names the operator, and the sink's
transactional-id claim is the operator's (for the job graph's check)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from undertow.connectors.file.committable import FileSinkCommittable
from undertow.connectors.kafka.sink_protocol import KafkaWriterState
from undertow.connectors.sink import OwnedBySubtask, Sink, SinkWriter, SinkWriterContext
from undertow.connectors.transactional_ids import ClaimsTransactionalIds, TransactionalIdClaim
from undertow.runtime.task.sink_operator import SinkWriterOperator, route_subtask
from undertow.testing.harness import OneInputOperatorTestHarness


@dataclass(frozen=True)
class UserCommittable:
    """A user sink's committable of its own shape, owned by a subtask."""

    transaction: str
    subtask: Any


def test_the_built_in_sinks_entries_are_owned_by_their_subtask() -> None:
    committable = FileSinkCommittable("s3://b/.part-3-0.inprogress", "s3://b/part-3-0", 10, 3)
    state = KafkaWriterState(subtask=5, parallelism=8, token="t", batches=())
    assert isinstance(committable, OwnedBySubtask) and isinstance(state, OwnedBySubtask)
    assert route_subtask(committable, snapshotted_by=0) == 3
    assert route_subtask(state, snapshotted_by=0) == 5


@pytest.mark.parametrize(
    ("entry", "routed_by"),
    [
        (UserCommittable("tx-1", 6), 6),
        (UserCommittable("tx-1", "6"), 2),  # not an int: no subtask said
        ("a committable without an owner", 2),
        ({"subtask": 6}, 2),  # a key is not the capability
    ],
)
def test_an_entry_goes_by_its_own_subtask_or_with_the_one_that_snapshotted_it(
    entry: Any, routed_by: int
) -> None:
    assert route_subtask(entry, snapshotted_by=2) == routed_by


class _RecordingSink(Sink):
    """Keeps the context its writer was made with; claims transactional ids on cluster ``h:1``."""

    def __init__(self) -> None:
        self.contexts: list[SinkWriterContext] = []

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        self.contexts.append(context)
        return _NullWriter()

    def transactional_id_claim(self) -> TransactionalIdClaim | None:
        return TransactionalIdClaim("Test", "p", "h:1", ("t",))


class _NullWriter(SinkWriter):
    def write(self, element: Any, timestamp: int | None) -> None:
        pass


def test_the_writer_learns_its_operator_name_and_the_operator_forwards_the_sink_claim() -> None:
    sink = _RecordingSink()
    operator = SinkWriterOperator(sink)
    assert isinstance(operator, ClaimsTransactionalIds)
    assert operator.transactional_id_claim() == sink.transactional_id_claim()
    assert SinkWriterOperator(_NullSink()).transactional_id_claim() is None
    harness = OneInputOperatorTestHarness(operator, name="Sink: orders")
    harness.open()
    try:
        assert [c.operator_name() for c in sink.contexts] == ["Sink: orders"]
    finally:
        harness.close()


class _NullSink(Sink):
    """A sink without the capability."""

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return _NullWriter()
