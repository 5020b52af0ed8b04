"""``HybridSource`` units: when the enumerator switches sources, what readers and checkpoints
hold. Driven by hand through fake contexts (no job)."""

from __future__ import annotations

import pytest

from undertow.connectors.hybrid import HybridEnumeratorState, HybridSplit
from undertow.connectors.source import InputStatus
from undertow.datastream.connectors import NumberSequenceSource
from undertow.datastream.connectors.hybrid_source import HybridSource
from undertow.testing.source_reader import (
    CollectingOutput,
    StandaloneEnumeratorContext,
    StandaloneReaderContext,
)


def _hybrid() -> HybridSource:
    return (
        HybridSource.builder(NumberSequenceSource(0, 9))
        .add_source(NumberSequenceSource(10, 19))
        .build()
    )


def test_switches_only_when_every_reader_asked_in_vain() -> None:
    ctx = StandaloneEnumeratorContext(parallelism=2)
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
    ctx = StandaloneEnumeratorContext(parallelism=1)
    inner = (
        NumberSequenceSource(10, 19)
        .create_enumerator(StandaloneEnumeratorContext(1))
        .snapshot_state(1)
    )
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


def test_reader_ends_a_source_before_reading_the_next_and_checkpoints_both() -> None:
    source = _hybrid()
    ctx = StandaloneEnumeratorContext(parallelism=1)
    enumerator = source.create_enumerator(ctx)
    enumerator.start()
    enumerator.add_reader(0)
    enumerator.handle_split_request(0, None)
    first = [v for _, s in ctx.assigned for v in range(s.split.start, s.split.end + 1)]
    reader = source.create_reader(StandaloneReaderContext())
    reader.add_splits([s for _, s in ctx.assigned])
    reader.start()
    later = HybridSplit(
        1,
        NumberSequenceSource(10, 19).create_enumerator(StandaloneEnumeratorContext(1)).remaining[0],
    )
    second = list(range(later.split.start, later.split.end + 1))
    reader.add_splits([later])  # held until source 0 ends
    assert [s.source_index for s in reader.snapshot_state(1)] == [0, 1]
    out = CollectingOutput()
    for _ in range(10):
        if reader.poll_next(out) is InputStatus.END_OF_INPUT:
            break
    reader.notify_no_more_splits()
    while reader.poll_next(out) is not InputStatus.END_OF_INPUT:
        pass
    assert first and out.values == first + second
