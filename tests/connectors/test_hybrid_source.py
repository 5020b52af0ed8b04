"""``HybridSource`` units: when the enumerator switches sources, what readers and checkpoints
hold. Driven by hand through fake contexts (no job)."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.connectors.hybrid import HybridEnumeratorState, HybridSplit
from undertow.connectors.source import InputStatus, SplitEnumeratorContext
from undertow.datastream.connectors import NumberSequenceSource
from undertow.datastream.connectors.hybrid_source import HybridSource


class _Ctx(SplitEnumeratorContext[Any]):
    def __init__(self, parallelism: int) -> None:
        self.parallelism = parallelism
        self.assigned: list[tuple[int, HybridSplit]] = []
        self.no_more: list[int] = []

    def current_parallelism(self) -> int:
        return self.parallelism

    def registered_readers(self) -> list[int]:
        return list(range(self.parallelism))

    def assign_split(self, split: Any, subtask: int) -> None:
        self.assigned.append((subtask, split))

    def signal_no_more_splits(self, subtask: int) -> None:
        self.no_more.append(subtask)


def _hybrid() -> HybridSource:
    return (
        HybridSource.builder(NumberSequenceSource(0, 9))
        .add_source(NumberSequenceSource(10, 19))
        .build()
    )


def test_switches_only_when_every_reader_asked_in_vain() -> None:
    ctx = _Ctx(parallelism=2)
    enumerator = _hybrid().create_enumerator(ctx)
    enumerator.start()
    for subtask in (0, 1):
        enumerator.add_reader(subtask)
    enumerator.handle_split_request(0, None)
    first = [s.source_index for _, s in ctx.assigned]
    assert first and set(first) == {0}
    while any(s.source_index == 0 for _, s in ctx.assigned[-1:]):
        before = len(ctx.assigned)
        enumerator.handle_split_request(0, None)
        if len(ctx.assigned) == before:
            break
    # reader 0 asked in vain: parked, nothing of source 1 yet, no "no more splits"
    assert all(s.source_index == 0 for _, s in ctx.assigned) and ctx.no_more == []
    assert enumerator.snapshot_state(1).source_index == 0
    enumerator.handle_split_request(1, None)  # reader 1 too: switch and answer both
    later = [(t, s.source_index) for t, s in ctx.assigned if s.source_index == 1]
    assert later and {t for t, _ in later} <= {0, 1}
    assert enumerator.snapshot_state(2).source_index == 1


def test_restored_enumerator_resumes_at_the_checkpointed_source() -> None:
    source = _hybrid()
    ctx = _Ctx(parallelism=1)
    inner = NumberSequenceSource(10, 19).create_enumerator(_Ctx(1)).snapshot_state(1)
    enumerator = source.restore_enumerator(ctx, HybridEnumeratorState(1, inner))
    enumerator.start()
    enumerator.add_reader(0)
    while not ctx.no_more:
        enumerator.handle_split_request(0, None)
    assert {s.source_index for _, s in ctx.assigned} == {1}
    with pytest.raises(ValueError, match="cannot restore at source 5"):
        source.restore_enumerator(ctx, HybridEnumeratorState(5, inner))
    with pytest.raises(TypeError, match="not a hybrid source checkpoint"):
        source.restore_enumerator(ctx, [1, 2])


def test_only_the_last_source_may_be_unbounded() -> None:
    from undertow.datastream.connectors import DataGeneratorSource

    unbounded = DataGeneratorSource(str)  # no count: unbounded
    with pytest.raises(ValueError, match="only the last source may be unbounded"):
        HybridSource.builder(unbounded).add_source(NumberSequenceSource(0, 1)).build()


class _Output:
    def __init__(self) -> None:
        self.values: list[Any] = []

    def collect(self, value: Any, timestamp: int | None = None) -> None:
        self.values.append(value)

    def collect_batch(self, values: list[Any], timestamps: Any = None) -> None:
        self.values.extend(values)

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None = None) -> None:
        raise AssertionError("no side outputs here")


class _ReaderCtx:
    def __init__(self) -> None:
        self.requests = 0

    def index_of_subtask(self) -> int:
        return 0

    def parallelism(self) -> int:
        return 1

    def send_split_request(self) -> None:
        self.requests += 1

    def notify_available(self) -> None:
        pass


def test_reader_ends_a_source_before_reading_the_next_and_checkpoints_both() -> None:
    source = _hybrid()
    ctx = _Ctx(parallelism=1)
    enumerator = source.create_enumerator(ctx)
    enumerator.start()
    enumerator.add_reader(0)
    enumerator.handle_split_request(0, None)
    first = [v for _, s in ctx.assigned for v in range(s.split.start, s.split.end + 1)]
    reader = source.create_reader(_ReaderCtx())  # type: ignore[arg-type]
    reader.add_splits([s for _, s in ctx.assigned])
    reader.start()
    later = HybridSplit(1, NumberSequenceSource(10, 19).create_enumerator(_Ctx(1)).remaining[0])
    second = list(range(later.split.start, later.split.end + 1))
    reader.add_splits([later])  # held until source 0 ends
    assert [s.source_index for s in reader.snapshot_state(1)] == [0, 1]
    out = _Output()
    for _ in range(10):
        if reader.poll_next(out) is InputStatus.END_OF_INPUT:
            break
    reader.notify_no_more_splits()
    while reader.poll_next(out) is not InputStatus.END_OF_INPUT:
        pass
    assert first and out.values == first + second
