"""connectors/source.py: an iterator reader asks whether its output is demanding once per output
(a runtime Protocol check costs ~0.1 ms on a loaded machine, as much as a few hundred records),
and still reads ``records_wanted`` at every poll."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.connectors import source
from undertow.connectors.source import InputStatus, JobBoundReader
from undertow.datastream.connectors.collection import CollectionSplit
from undertow.testing.source_reader import CollectingOutput, StandaloneReaderContext


class _PlainOutput:
    """A reader output without ``records_wanted``."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def collect(self, value: Any, timestamp: int | None = None) -> None:
        self.sizes.append(1)

    def collect_batch(self, values: list[Any], timestamps: list[Any] | None = None) -> None:
        self.sizes.append(len(values))

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None = None) -> None:
        pass


def test_the_demand_check_runs_once_per_output(monkeypatch: pytest.MonkeyPatch) -> None:
    checks: list[object] = []
    real = source.is_demanding
    monkeypatch.setattr(source, "is_demanding", lambda out: checks.append(out) or real(out))
    reader = JobBoundReader(StandaloneReaderContext(), list(range(10_000)), batch_size=100)
    reader.add_splits([CollectionSplit()])
    demanding = CollectingOutput(30)
    for wanted in (30, 30, 7):  # the limit is read at every poll
        demanding.records_wanted = wanted
        assert reader.poll_next(demanding) is InputStatus.MORE_AVAILABLE
    assert demanding.batches == [30, 30, 7]
    plain = _PlainOutput()  # another output: checked anew, and it sets no limit
    reader.poll_next(plain)
    reader.poll_next(plain)
    assert plain.sizes == [100, 100]
    assert checks == [demanding, plain]


def test_first_discovery_remembers_each_reader_once_in_the_order_they_asked() -> None:
    pending = source.FirstDiscovery(done=False)
    assert [pending.defer(s) for s in (2, 0, 2)] == [True, True, True]
    assert pending.end() == [2, 0] and pending.done
    assert pending.defer(1) is False and pending.end() == []
    assert source.FirstDiscovery(done=True).defer(0) is False
