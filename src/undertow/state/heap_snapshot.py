"""A heap keyed-state snapshot that is cheap to take: key groups are serialized on first touch.

Flink's ``CopyOnWriteStateTable`` makes the synchronous part of a heap snapshot O(1) per
table and copies an entry only when it is written while a snapshot still needs it. Here the
unit is the key group: :meth:`HeapKeyedStateBackend.snapshot` only records which key groups
hold state (:class:`PendingKeyGroups`, O(key groups x states), no pickling); each is
serialized later, either when the snapshot's bytes are needed (:meth:`PendingKeyGroups.result`,
or pickling the snapshot), in slices (:meth:`PendingKeyGroups.step`), or at once *before* the
backend lets anyone touch that key group again (``set_current_key`` to a key of it, a batch
fold, a TTL conversion, restore, dispose). Every state access of the heap backend goes
through a current key, so no change made after the snapshot can reach a key group that is
not serialized yet: the snapshot is the state at the time it was taken, even when user code
mutates a value object in place.

Threading: the owning subtask's thread only, like the backend.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

#: Serializes the key group at an offset as it is now: its blob, or None if nothing is left.
EncodeGroup = Callable[[int], bytes | None]


class PendingKeyGroups(dict[int, bytes]):
    """The keyed state of one snapshot: blobs of the key groups serialized so far, and the
    offsets still to serialize. It is the ``dict[int, bytes]`` (key group -> blob) the backend
    contract promises: reading it as a dict serializes what is left first, truth-testing it
    does not, and it pickles as a plain dict."""

    __slots__ = ("_done", "_encode", "_pending", "_start", "encoded_on_touch", "error")

    def __init__(self, offsets: list[int], start: int, encode: EncodeGroup,
                 done: Callable[[PendingKeyGroups], None]) -> None:  # fmt: skip
        super().__init__()
        #: offsets (key group - start) not serialized yet, in ascending order of key group
        self._pending: dict[int, None] = dict.fromkeys(offsets)
        self._start = start
        self._encode = encode
        self._done = done
        #: Key groups serialized because they were touched while pending (that work ran on
        #: the record path); the others were serialized by :meth:`step` or :meth:`result`.
        self.encoded_on_touch = 0
        #: Why a key group could not be serialized: the snapshot failed. It is raised where
        #: the snapshot is read (the checkpoint's asynchronous part, which declines it), never
        #: on the record path that touched the key group.
        self.error: Exception | None = None
        if not offsets:
            done(self)

    def is_pending(self, offset: int) -> bool:
        return offset in self._pending

    @property
    def remaining(self) -> int:
        """Key groups not serialized yet."""
        return len(self._pending)

    def touch(self, offset: int) -> None:
        """The backend is about to let someone read or write key group ``offset``: serialize
        it first if this snapshot still needs it."""
        if offset in self._pending:
            self.encoded_on_touch += 1
            self._encode_one(offset)

    def step(self, deadline: float) -> bool:
        """Serialize pending key groups until ``deadline`` (``time.perf_counter()``), at least
        one; True once none is left."""
        while self._pending:
            self._encode_one(next(iter(self._pending)))
            if time.perf_counter() >= deadline:
                break
        return not self._pending

    def result(self) -> dict[int, bytes]:
        """Every key group's blob, as a plain dict (serializes what is left); raises
        :attr:`error` if a key group could not be serialized."""
        self._complete()
        return dict(super().items())

    def finish(self) -> None:
        """Serialize what is left, before the backend changes every key group; a failure stays
        in :attr:`error` for whoever reads the snapshot (this is the record path)."""
        while self._pending:
            self._encode_one(next(iter(self._pending)))

    def _encode_one(self, offset: int) -> None:
        del self._pending[offset]
        try:
            blob = self._encode(offset)
        except Exception as err:  # the snapshot fails, not the record that touched the group
            self.error = err
            self._pending.clear()  # nothing more to keep: this snapshot is never complete
            blob = None
        if blob is not None:
            super().__setitem__(self._start + offset, blob)
        if not self._pending:
            self._done(self)

    # -- the dict it stands for: complete before any read ------------------------------------
    def _complete(self) -> None:
        self.finish()
        if self.error is not None:
            raise self.error

    def items(self) -> Any:
        self._complete()
        return super().items()

    def keys(self) -> Any:
        self._complete()
        return super().keys()

    def values(self) -> Any:
        self._complete()
        return super().values()

    def get(self, key: int, default: Any = None) -> Any:
        self._complete()
        return super().get(key, default)

    def __iter__(self) -> Iterator[int]:
        self._complete()
        return super().__iter__()

    def __getitem__(self, key_group: int) -> bytes:
        self._complete()
        return super().__getitem__(key_group)

    def __contains__(self, key_group: object) -> bool:
        self._complete()
        return super().__contains__(key_group)

    def __len__(self) -> int:
        self._complete()
        return super().__len__()

    def __bool__(self) -> bool:
        # a failed snapshot is not an empty one: it must be read, and raise, not be dropped
        return bool(self._pending) or self.error is not None or super().__len__() > 0

    def __eq__(self, other: object) -> bool:
        self._complete()
        return dict(super().items()) == other

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.result(),))

    def __repr__(self) -> str:
        return (f"PendingKeyGroups({super().__len__()} serialized, "
                f"{len(self._pending)} pending)")  # fmt: skip


class DeferredBlobs(PendingKeyGroups):
    """Blobs computed all at once when first read (or stepped): for state whose synchronous
    part already copied what it needs (the timers' immutable entries), so that grouping and
    pickling leave the synchronous part without a per-key-group touch rule."""

    __slots__ = ("_compute",)

    def __init__(self, compute: Callable[[], dict[int, bytes]]) -> None:
        self._compute = compute
        super().__init__([0], 0, _no_blob, _ignore)

    def _encode_one(self, offset: int) -> None:
        del self._pending[offset]
        dict.update(self, self._compute())


def _no_blob(offset: int) -> bytes | None:
    return None


def _ignore(snapshot: PendingKeyGroups) -> None:
    pass
