"""The set-up the columnar operator tests share: one subtask of a keyed batch operator in the
operator test harness, optionally restored from key-group blobs (a rescale when those blobs
come from a different parallelism)."""

from __future__ import annotations

from collections.abc import Iterator
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
