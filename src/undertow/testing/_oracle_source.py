"""``OracleSource``: the oracle's bounded FLIP-27 generator (docs/testing.md, "The oracle").

Keys are ``0 .. keys-1``; key ``k`` emits ``seq = 1 .. records_per_key``, in order. The source
has one split per reader subtask and split ``i`` of ``n`` owns the keys ``k`` with
``k % n == i``, so every key is owned by exactly one split and its order is defined. A split
interleaves its keys: its record at position ``j`` is key ``keys[j % len(keys)]``, seq
``j // len(keys) + 1``, so all keys advance together.

Checkpoints: a split's position is the number of records it emitted; the reader's
``snapshot_state`` returns copies of its splits with their positions, and a split restored
from a checkpoint resumes right after the last record emitted before that checkpoint. The
enumerator's state is the list of splits not assigned yet, and ``restore_enumerator`` resumes
from it (a fresh enumerator would hand out splits a second time).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from undertow.connectors.source import (
    Boundedness,
    IteratorSourceReader,
    IteratorSplit,
    Source,
    SourceReader,
    SourceReaderContext,
    SplitEnumerator,
    SplitEnumeratorContext,
    StaticSplitEnumerator,
)
from undertow.testing._oracle_records import (
    DEFAULT_SIZES,
    OracleRecord,
    SizeClass,
    _check_sizes,
    make_record,
)
from undertow.testing.gates import SourceHold

_MAX_BATCH = 256


@dataclass(slots=True)
class OracleSplit(IteratorSplit):
    """Keys ``keys`` (each emitting ``1 .. records_per_key``) and how many records went out."""

    index: int
    keys: tuple[int, ...]
    records_per_key: int
    sizes: tuple[SizeClass, ...] = DEFAULT_SIZES
    seed: int = 0
    position: int = 0

    def split_id(self) -> str:
        return f"oracle-{self.index}"

    @property
    def total(self) -> int:
        """Records this split emits in all."""
        return len(self.keys) * self.records_per_key

    @property
    def is_finished(self) -> bool:
        return self.position >= self.total

    def key_seq_at(self, position: int) -> tuple[int, int]:
        """(key, seq) of the record at ``position`` (0-based)."""
        if not 0 <= position < self.total:
            raise IndexError(f"split {self.index}: position {position} not in [0, {self.total})")
        width = len(self.keys)
        return self.keys[position % width], position // width + 1

    def next_batch(self, limit: int) -> list[OracleRecord]:
        """Up to ``limit`` records from the current position on; advances the position."""
        end = min(self.total, self.position + limit)
        keys, width, sizes, seed = self.keys, len(self.keys), self.sizes, self.seed
        batch = [
            make_record(keys[j % width], j // width + 1, sizes, seed)
            for j in range(self.position, end)
        ]
        self.position = end
        return batch

    def copy(self) -> OracleSplit:
        return replace(self)


class OracleSource(Source[OracleSplit]):
    """Bounded source of ``keys * records_per_key`` :class:`OracleRecord` s (see the module doc).

    ``sizes`` is the payload size mix, ``seed`` varies which record gets which size, and
    ``records_per_second`` (per reader; ``None``: unthrottled) slows the source down;
    ``hold`` stops each reader after some records until the test releases it
    (:class:`~undertow.testing.gates.SourceHold`).
    """

    def __init__(
        self,
        keys: int,
        records_per_key: int,
        sizes: Sequence[SizeClass] = DEFAULT_SIZES,
        seed: int = 0,
        records_per_second: float | None = None,
        hold: SourceHold | None = None,
    ) -> None:
        if keys < 1 or records_per_key < 1:
            raise ValueError(
                f"OracleSource needs keys >= 1 and records_per_key >= 1, got {keys} and "
                f"{records_per_key}"
            )
        if records_per_second is not None and records_per_second <= 0:
            raise ValueError(f"records_per_second must be > 0, got {records_per_second}")
        self.keys = keys
        self.records_per_key = records_per_key
        self.sizes = _check_sizes(sizes)
        self.seed = seed
        self.records_per_second = records_per_second
        self.hold = hold

    @property
    def total_records(self) -> int:
        return self.keys * self.records_per_key

    def splits(self, parallelism: int) -> list[OracleSplit]:
        """The splits for ``parallelism`` readers: split ``i`` owns the keys ``k`` with
        ``k % parallelism == i``."""
        if parallelism < 1:
            raise ValueError(f"parallelism must be >= 1, got {parallelism}")
        return [
            OracleSplit(
                i,
                tuple(range(i, self.keys, parallelism)),
                self.records_per_key,
                self.sizes,
                self.seed,
            )
            for i in range(parallelism)
            if i < self.keys
        ]

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader[OracleSplit]:
        if self.hold is not None:
            return self.hold.reader(context, _MAX_BATCH, self.records_per_second)
        return IteratorSourceReader(context, _MAX_BATCH, self.records_per_second)

    def create_enumerator(
        self, context: SplitEnumeratorContext[OracleSplit]
    ) -> SplitEnumerator[OracleSplit]:
        return StaticSplitEnumerator(context, self.splits(context.current_parallelism()))

    def restore_enumerator(
        self, context: SplitEnumeratorContext[OracleSplit], checkpoint: Any
    ) -> SplitEnumerator[OracleSplit]:
        """Resume handing out the splits that were not assigned at the checkpoint."""
        return StaticSplitEnumerator(context, [s.copy() for s in (checkpoint or [])])
