"""Run a source's :class:`~undertow.connectors.source.SourceReader` or
:class:`~undertow.connectors.source.SplitEnumerator` without a job: a reader context of one
subtask that records what the reader asked of it, an output that collects what it emits, and
an enumerator context that records the splits handed out. For tests of a user's or a
connector's source: create the reader with :class:`StandaloneReaderContext`, add splits, call
``poll_next(output)`` with a :class:`CollectingOutput`, and snapshot where you like; create
the enumerator with :class:`StandaloneEnumeratorContext` and read its ``assigned``.

Threading: plain objects for the test's thread; ``notify_available`` only counts, as the
task's mailbox would be woken.
"""

from __future__ import annotations

from typing import Any, Generic

from undertow.connectors.source import SourceReaderContext, SplitEnumeratorContext, SplitT


class StandaloneReaderContext(SourceReaderContext):
    """Subtask ``subtask`` of ``parallelism``; counts split requests and wake-ups."""

    def __init__(self, subtask: int = 0, parallelism: int = 1) -> None:
        self.subtask = subtask
        self.subtasks = parallelism
        self.split_requests = 0
        self.wake_ups = 0

    def index_of_subtask(self) -> int:
        return self.subtask

    def parallelism(self) -> int:
        return self.subtasks

    def send_split_request(self) -> None:
        self.split_requests += 1

    def notify_available(self) -> None:
        self.wake_ups += 1


class CollectingOutput:
    """A :class:`~undertow.connectors.source.DemandingReaderOutput` that keeps every record in
    ``values`` (and its timestamp in ``timestamps``), every batch call's size in ``batches``,
    and side output records per tag in ``side``. ``records_wanted`` (None: no limit) is the
    soft limit per ``poll_next`` that buffer debloating would set."""

    def __init__(self, records_wanted: int | None = None) -> None:
        self.records_wanted = records_wanted
        self.values: list[Any] = []
        self.timestamps: list[int | None] = []
        self.batches: list[int] = []
        self.side: dict[str, list[Any]] = {}

    def collect(self, value: Any, timestamp: int | None = None) -> None:
        self.values.append(value)
        self.timestamps.append(timestamp)

    def collect_batch(self, values: list[Any], timestamps: list[Any] | None = None) -> None:
        self.values.extend(values)
        self.timestamps.extend(timestamps if timestamps is not None else [None] * len(values))
        self.batches.append(len(values))

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None = None) -> None:
        self.side.setdefault(tag_id, []).append(value)


class StandaloneEnumeratorContext(SplitEnumeratorContext[SplitT], Generic[SplitT]):
    """A split enumerator's context for testing an enumerator alone: readers ``0 ..
    parallelism - 1`` are registered; ``assigned`` holds ``(subtask, split)`` per assignment
    and ``no_more`` the subtasks told that no more splits come, both in call order."""

    def __init__(self, parallelism: int = 1) -> None:
        self.parallelism = parallelism
        self.assigned: list[tuple[int, SplitT]] = []
        self.no_more: list[int] = []

    def current_parallelism(self) -> int:
        return self.parallelism

    def registered_readers(self) -> list[int]:
        return list(range(self.parallelism))

    def assign_split(self, split: SplitT, subtask: int) -> None:
        self.assigned.append((subtask, split))

    def signal_no_more_splits(self, subtask: int) -> None:
        self.no_more.append(subtask)
