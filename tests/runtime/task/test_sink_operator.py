"""The sink operator's routing of its state after a rescale: an entry that says its subtask
(:class:`OwnedBySubtask`) goes by it, any other with the subtask that snapshotted it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from undertow.connectors.file.committable import FileSinkCommittable
from undertow.connectors.kafka.sink_protocol import KafkaWriterState
from undertow.connectors.sink import OwnedBySubtask
from undertow.runtime.task.sink_operator import route_subtask


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
