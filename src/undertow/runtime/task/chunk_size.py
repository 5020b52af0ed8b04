"""How many records a subtask hands its head at once: chunk sizes bounded by time.

A chunk runs to its end before the task looks at its mailbox again (a checkpoint trigger or
barrier, timers, a cancel). After each chunk the task tells :class:`ChunkSizer` how many
records it took and how long (one clock read per chunk, none per record); the next chunk is
the smaller of the records that fit :data:`SLICE_SHARE` of the slice at the cost just seen
and :data:`GROWTH` times the records just taken (a chunk cut short by its batch's end keeps
its size): chunks regrow geometrically, so slow records that recur among fast ones are taken
about one a chunk. The first chunk after a long fast phase in which records turn slow is not
bounded by any sizing (docs/design.md, "Mailbox slices end inside a batch").

Pure: facts in, a size out. Threading: owned by one input processor on its task's loop thread.
"""

from __future__ import annotations

#: Fewest and most records in a chunk.
MIN_CHUNK, MAX_CHUNK = 1, 1 << 16
#: A chunk aims at this share of the slice, so that a slice holds a few chunks and one that
#: turns out slower than its predecessor still ends near the slice.
SLICE_SHARE = 0.25
#: Most a chunk grows over the records of the chunk before it.
GROWTH = 2


def next_chunk(size: int, count: int, elapsed_s: float, slice_s: float) -> int:
    """Records of the next chunk after one of ``count`` records (of the ``size`` it could
    have had; fewer when its batch ended or the output had room for fewer) took ``elapsed_s``
    seconds, within a slice of ``slice_s`` seconds (module docstring). Always within
    [:data:`MIN_CHUNK`, :data:`MAX_CHUNK`], and at most :data:`GROWTH` times ``size``; a fast
    chunk cut short keeps ``size``, since the records before it were as fast."""
    grown = GROWTH * count
    if grown < size:
        grown = size
    budget = SLICE_SHARE * slice_s * count  # the target times ``count``: fits = budget / elapsed
    if budget < grown * elapsed_s:  # fewer fit than ``grown`` (never true at no time elapsed)
        grown = int(budget / elapsed_s)
    if grown < MIN_CHUNK:
        return MIN_CHUNK
    return grown if grown < MAX_CHUNK else MAX_CHUNK


class ChunkSizer:
    """The size of a subtask's next chunk (module docstring).

    Invariant: ``MIN_CHUNK <= size <= MAX_CHUNK``. The first chunk is one record: the
    functions' cost is unknown, and a first chunk of 64 records through a map of 100 ms per
    record held the task (its results, a cancel, a barrier) for 6.4 s.
    """

    __slots__ = ("size",)

    def __init__(self) -> None:
        #: Records of the next chunk.
        self.size = MIN_CHUNK

    def observe(self, count: int, elapsed_s: float, slice_s: float) -> None:
        """A chunk of ``count`` records took ``elapsed_s`` seconds within a slice of
        ``slice_s`` seconds. A chunk of no records (a source with nothing pending) tells
        nothing and leaves the size."""
        if count > 0:
            self.size = next_chunk(self.size, count, elapsed_s, slice_s)
