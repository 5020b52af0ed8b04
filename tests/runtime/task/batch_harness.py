"""The set-up the columnar operator tests share: one subtask of a keyed batch operator in the
operator test harness, optionally restored from key-group blobs (a rescale when those blobs
come from a different parallelism)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeAlias, TypeVar

from undertow.runtime.task.operator import KeyGroupedState
from undertow.testing.harness import OneInputOperatorTestHarness

#: The columnar tests' max parallelism: 16 key groups.
MAX_PARALLELISM = 16

Op = TypeVar("Op", bound=KeyGroupedState)
#: What :func:`keyed_batch_harness` returns for an operator of type ``Op``.
Batched: TypeAlias = AbstractContextManager[tuple[Op, OneInputOperatorTestHarness]]


@contextmanager
def keyed_batch_harness(
    op: Op, name: str, *, subtask: int = 0, parallelism: int = 1,
    blobs: dict[int, bytes] | None = None, **harness: Any,
) -> Iterator[tuple[Op, OneInputOperatorTestHarness]]:  # fmt: skip
    """``op`` as subtask ``subtask`` of ``parallelism`` (set up, restored from ``blobs`` if
    given, opened), and its harness; closed on exit. ``harness``: more harness options."""
    h = OneInputOperatorTestHarness(op, name=name, max_parallelism=MAX_PARALLELISM, **harness)
    h.setup_context.subtask_index = subtask
    h.setup_context.parallelism = parallelism
    h.setup()
    if blobs is not None:
        op.restore_key_groups(blobs)
    with h:
        yield op, h


def flink_window_rows(steps: list[Any], size: int, slide: int) -> dict[tuple[int, int], list[Any]]:
    """Flink's event-time windows record by record, over ``steps`` (an int: a watermark; a
    list of ``(k, t, *values)`` rows: a batch): each row is assigned to its windows
    ``[start, start + size)`` every ``slide``, dropped where the window's last millisecond is
    at or below the watermark (late), and each window fires once the watermark reaches its
    last millisecond. The fired windows ``(k, start)`` and their rows' ``values`` tuples."""
    open_: dict[tuple[int, int], list[Any]] = {}
    fired: dict[tuple[int, int], list[Any]] = {}
    watermark = -(2**63)
    for step in steps:
        if isinstance(step, int):
            watermark = max(watermark, step)
            for key in [w for w in open_ if w[1] + size - 1 <= watermark]:
                fired[key] = open_.pop(key)
            continue
        for k, t, *values in step:
            last = t - t % slide
            for start in range(last, t - size, -slide):
                if start + size - 1 > watermark:
                    open_.setdefault((k, start), []).append(tuple(values))
    return fired


#: Each batch aggregation over a window's values, in plain Python.
AGGREGATE: dict[str, Callable[[list[Any]], Any]] = {
    "sum": sum, "count": len, "min": min, "max": max, "mean": lambda vs: sum(vs) / len(vs),
}  # fmt: skip
