"""What a keyed operator's timers cost a checkpoint: the snapshot of N heap timers on K keys.

A ``KeyedProcessFunction`` that registers an event-time timer per record (Flink's
``CountWithTimeoutFunction`` example) holds every record's timer until the watermark passes
it, and each checkpoint snapshots them all: the blobs are made on the task thread
(:class:`~undertow.state.heap_snapshot.DeferredBlobs`), so their cost is the task's. Prints the
best of five snapshots (grouping by key group and pickling) and one restore. Usage::

    python benchmarks/timer_snapshot.py [--timers N] [--keys K]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from undertow.runtime.task.timers import InternalTimer, TimerServiceManager
from undertow.state.heap import HeapKeyedStateBackend


class _Clock:
    """A processing-time service that never fires (the timers here are event-time ones)."""

    def current_processing_time(self) -> int:
        return 0

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> Any:
        return None


class _Ignore:
    def on_event_time(self, timer: InternalTimer) -> None:
        pass

    def on_processing_time(self, timer: InternalTimer) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timers", type=int, default=60_000)
    parser.add_argument("--keys", type=int, default=1_000)
    args = parser.parse_args()
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    manager = TimerServiceManager(backend, _Clock())
    service = manager.get("user-timers", _Ignore())
    for x in range(args.timers):
        backend.set_current_key(x % args.keys)
        service.register_event_time_timer(None, x + 60_000)
    best, blobs = float("inf"), {}
    for _ in range(5):
        start = time.perf_counter()
        blobs = dict(manager.snapshot().items())
        best = min(best, time.perf_counter() - start)
    size = sum(map(len, blobs.values()))
    start = time.perf_counter()
    restored_backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    restored = TimerServiceManager(restored_backend, _Clock())
    restored.restore(blobs)
    count = restored.get("user-timers", _Ignore()).num_event_time_timers()
    took = time.perf_counter() - start
    print(f"{args.timers:,} timers on {args.keys:,} keys: snapshot {best * 1e3:.1f} ms "
          f"({best / args.timers * 1e9:.0f} ns a timer), {size / 1e6:.2f} MB; "
          f"restore {took * 1e3:.1f} ms ({count:,} timers)")  # fmt: skip


if __name__ == "__main__":
    main()
