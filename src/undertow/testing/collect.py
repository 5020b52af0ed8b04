"""What the driver holds of an ``execute_and_collect`` iterator's results, for tests and
benchmarks: :func:`collect_statistics` (bytes held, the window, the peak, the largest batch)
and :func:`completed_checkpoints` (checkpoints the iterator's job completed so far).

Threading: any thread (both read frozen records under the JobMaster's locks); cost: a lock.
"""

from __future__ import annotations

from undertow.datastream.data_stream_sink import CloseableIterator
from undertow.runtime.master.collect_results import CollectStatistics

__all__ = ["CollectStatistics", "collect_statistics", "completed_checkpoints"]


def collect_statistics(iterator: CloseableIterator) -> CollectStatistics:
    """The results of ``iterator``'s sink on the driver now (``undertow.collect.buffer-size``
    bounds ``peak_unread`` to the window plus ``largest_batch`` outside an overdraft)."""
    return iterator._results.statistics(iterator._sink_id)


def completed_checkpoints(iterator: CloseableIterator) -> int:
    """How many checkpoints (savepoints among them) ``iterator``'s job completed so far."""
    snapshot = iterator._client._master.checkpoint_stats.snapshot()
    return int(snapshot.completed)
