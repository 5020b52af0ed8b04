"""``NumberSequenceSource``'s splits (docs/connectors.md, "Number sequences and event time"):
contiguous ranges, four per reader, handed out in ascending order as readers ask, so each
reader's numbers ascend; a checkpoint keeps the ranges not handed out yet."""

from __future__ import annotations

from typing import Any

from undertow.datastream.connectors.number_seq import NumberSequenceSource, NumberSequenceSplit
from undertow.testing.source_reader import StandaloneEnumeratorContext


def ranges(splits: list[Any]) -> list[tuple[int, int]]:
    return [(s.start, s.end) for s in splits]


def test_the_range_is_cut_into_four_contiguous_splits_per_reader_in_order() -> None:
    context: StandaloneEnumeratorContext[NumberSequenceSplit] = StandaloneEnumeratorContext(2)
    enumerator = NumberSequenceSource(1, 800).create_enumerator(context)
    for reader in (0, 1, 1, 0, 0):  # reader 1 is ahead: it asks twice in a row
        enumerator.handle_split_request(reader, None)
    handed = [(reader, (split.start, split.end)) for reader, split in context.assigned]
    assert handed == [(0, (1, 100)), (1, (101, 200)), (1, (201, 300)), (0, (301, 400)),
                      (0, (401, 500))]  # fmt: skip
    assert ranges(enumerator.snapshot_state(1)) == [(501, 600), (601, 700), (701, 800)]
    restored = NumberSequenceSource(1, 800).restore_enumerator(
        context, enumerator.snapshot_state(1)
    )
    restored.handle_split_request(1, None)
    assert context.assigned[-1][1].start == 501  # the next range, as before the restore


def test_a_short_sequence_has_one_split_per_number_at_most() -> None:
    context: StandaloneEnumeratorContext[NumberSequenceSplit] = StandaloneEnumeratorContext(4)
    enumerator = NumberSequenceSource(5, 7).create_enumerator(context)
    assert ranges(enumerator.snapshot_state(1)) == [(5, 5), (6, 6), (7, 7)]
