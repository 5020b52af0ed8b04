"""Stream partitioners: which downstream channel each record of a batch goes to.

A partitioner works on a whole batch and returns, per target channel, the values and
timestamps that go there (``{channel: (values, timestamps)}``), so the per-record work is one
tight loop (key-group hash) or none at all (forward, rebalance by slicing).

A partitioner object is a template in the job graph; every producing subtask calls
:meth:`StreamPartitioner.copy` and then :meth:`setup` with its number of channels.

``supports_unaligned`` follows Flink: pointwise edges (forward, rescale) and broadcast edges
carry no key context and never take unaligned channel state, and an edge whose partitioner had
``disable_unaligned_checkpoints()`` called (a sink's writer->committer edge) stays aligned.
"""

from __future__ import annotations

import copy
import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from undertow.common.row import Row
from undertow.core.errors import KeyTypeError
from undertow.state.key_groups import (
    PLAIN_KEY_TYPES,
    assign_to_key_group,
    groups_by_equality,
    selector_failed,
)

Routed = dict[int, tuple[list[Any], list[Any] | None]]
_TARGET_CACHE_LIMIT = 1 << 16


class StreamPartitioner(ABC):
    #: Name shown in plans and errors ("FORWARD", "HASH", ...).
    kind: str = ""
    #: Pointwise edges connect each producer to a subset of consumers.
    is_pointwise: bool = False
    is_broadcast: bool = False

    def __init__(self) -> None:
        self.num_channels = 0
        self.unaligned_disabled = False

    def setup(self, num_channels: int) -> None:
        self.num_channels = num_channels

    def copy(self) -> StreamPartitioner:
        return copy.copy(self)

    @property
    def supports_unaligned(self) -> bool:
        return not (self.is_pointwise or self.is_broadcast or self.unaligned_disabled)

    def disable_unaligned_checkpoints(self) -> StreamPartitioner:
        """Keep this edge aligned (Flink's ``StreamPartitioner.disableUnalignedCheckpoints``)."""
        self.unaligned_disabled = True
        return self

    @abstractmethod
    def route(self, values: list[Any], timestamps: list[Any] | None) -> Routed:
        """Split a batch among channels; lists may be the caller's own (they are not reused)."""

    def __repr__(self) -> str:
        return self.kind


def _split(values: list[Any], timestamps: list[Any] | None, targets: list[int], n: int) -> Routed:
    out_v: list[list[Any]] = [[] for _ in range(n)]
    routed: Routed = {}
    if timestamps is None:
        appends = [lst.append for lst in out_v]
        for value, target in zip(values, targets):
            appends[target](value)
        for ch in range(n):
            if out_v[ch]:
                routed[ch] = (out_v[ch], None)
        return routed
    out_t: list[list[Any]] = [[] for _ in range(n)]
    for value, ts, target in zip(values, timestamps, targets):
        out_v[target].append(value)
        out_t[target].append(ts)
    for ch in range(n):
        if out_v[ch]:
            routed[ch] = (out_v[ch], out_t[ch])
    return routed


class ForwardPartitioner(StreamPartitioner):
    kind = "FORWARD"
    is_pointwise = True

    def route(self, values: list[Any], timestamps: list[Any] | None) -> Routed:
        return {0: (values, timestamps)}


class GlobalPartitioner(StreamPartitioner):
    kind = "GLOBAL"

    def route(self, values: list[Any], timestamps: list[Any] | None) -> Routed:
        return {0: (values, timestamps)}


class RebalancePartitioner(StreamPartitioner):
    """Round robin per record, starting at a random channel (Flink's behaviour)."""

    kind = "REBALANCE"

    def setup(self, num_channels: int) -> None:
        super().setup(num_channels)
        self._next = random.randrange(num_channels)

    def route(self, values: list[Any], timestamps: list[Any] | None) -> Routed:
        n = self.num_channels
        if n == 1:
            return {0: (values, timestamps)}
        start = self._next
        routed: Routed = {}
        for i in range(n):
            part = values[i::n]
            if part:
                routed[(start + i) % n] = (part, None if timestamps is None else timestamps[i::n])
        self._next = (start + len(values)) % n
        return routed


class RescalePartitioner(RebalancePartitioner):
    """Round robin over this producer's subset of consumers (pointwise)."""

    kind = "RESCALE"
    is_pointwise = True


class ShufflePartitioner(StreamPartitioner):
    kind = "SHUFFLE"

    def route(self, values: list[Any], timestamps: list[Any] | None) -> Routed:
        n = self.num_channels
        if n == 1:
            return {0: (values, timestamps)}
        rnd = random.randrange
        return _split(values, timestamps, [rnd(n) for _ in values], n)


class BroadcastPartitioner(StreamPartitioner):
    kind = "BROADCAST"
    is_broadcast = True

    def route(self, values: list[Any], timestamps: list[Any] | None) -> Routed:
        return {ch: (values, timestamps) for ch in range(self.num_channels)}


class KeyGroupStreamPartitioner(StreamPartitioner):
    """``key_by``: key -> key group -> owning subtask, with Flink's key-group ranges."""

    kind = "HASH"

    def __init__(
        self,
        key_selector: Callable[[Any], Any],
        max_parallelism: int,
        *,
        checks_keys: bool = False,
    ) -> None:
        super().__init__()
        self.key_selector = key_selector
        self.max_parallelism = max_parallelism
        #: The selector checks each key (``key_by``'s ``key_type``): it runs on every record
        #: even with one channel, as PyFlink's key-by operator writes every key.
        self.checks_keys = checks_keys

    def setup(self, num_channels: int) -> None:
        super().setup(num_channels)
        self._targets: dict[Any, int] = {}
        self._float_targets: dict[float, int] = {}

    def _target(self, key: Any) -> int:
        """Channel of ``key``, cached (bounded) because keys repeat: one dict lookup. Only a key
        for which equal means the same key group (:func:`groups_by_equality`) is looked up or
        stored: ``1.0`` must not be sent where ``1`` went."""
        maxp = self.max_parallelism
        if groups_by_equality(key):
            cache = self._targets
        elif type(key) is float and key:  # floats apart, and never ±0.0 (equal, other groups)
            cache = self._float_targets
        elif isinstance(key, Row):  # a key_type ROW's key: its key group is its tuple's
            return self._target(tuple(key))
        else:  # also an unhashable key: computed every time
            return assign_to_key_group(key, maxp) * self.num_channels // maxp
        try:
            return cache[key]
        except KeyError:
            pass
        target = assign_to_key_group(key, maxp) * self.num_channels // maxp
        if len(cache) >= _TARGET_CACHE_LIMIT:
            cache.clear()
        cache[key] = target
        return target

    def route(self, values: list[Any], timestamps: list[Any] | None) -> Routed:
        n = self.num_channels
        if n == 1 and not self.checks_keys:
            return {0: (values, timestamps)}
        ks, cache, float_cache, slow = (
            self.key_selector,
            self._targets,
            self._float_targets,
            self._target,
        )
        # _target's choice of cache, written out: a call per record costs more than the checks
        # (groups_by_equality's loop over a tuple's fields, inline; a nested tuple calls it)
        plain, by_equality = PLAIN_KEY_TYPES, groups_by_equality
        if timestamps is None:  # one pass: key, channel, append (no list of targets)
            out_v: list[list[Any]] = [[] for _ in range(n)]
            appends = [lst.append for lst in out_v]
            try:
                for v in values:
                    key = ks(v)
                    t = type(key)
                    if t is int or t is str:
                        try:
                            ch = cache[key]
                        except KeyError:
                            ch = slow(key)
                    elif t is tuple:
                        for item in key:
                            if type(item) not in plain and not by_equality(item):
                                ch = slow(key)  # (1.0,) == (1,), another key group
                                break
                        else:
                            try:
                                ch = cache[key]
                            except KeyError:
                                ch = slow(key)
                    elif t is float and key:  # not ±0.0
                        try:
                            ch = float_cache[key]
                        except KeyError:
                            ch = slow(key)
                    else:
                        ch = slow(key)
                    appends[ch](v)
            except KeyTypeError:
                raise
            except Exception as err:
                raise selector_failed(v, err, ks) from err
            return {ch: (vs, None) for ch, vs in enumerate(out_v) if vs}
        targets: list[int] = []
        append = targets.append
        try:
            for v in values:
                key = ks(v)
                t = type(key)
                if t is int or t is str:
                    try:
                        ch = cache[key]
                    except KeyError:
                        ch = slow(key)
                elif t is tuple:
                    for item in key:
                        if type(item) not in plain and not by_equality(item):
                            ch = slow(key)
                            break
                    else:
                        try:
                            ch = cache[key]
                        except KeyError:
                            ch = slow(key)
                elif t is float and key:
                    try:
                        ch = float_cache[key]
                    except KeyError:
                        ch = slow(key)
                else:
                    ch = slow(key)
                append(ch)
        except KeyTypeError:
            raise
        except Exception as err:
            raise selector_failed(v, err, ks) from err
        return _split(values, timestamps, targets, n)


class CustomPartitionerWrapper(StreamPartitioner):
    """``partition_custom``: the user's ``partition(key, num_partitions)`` picks the channel."""

    kind = "CUSTOM"

    def __init__(
        self,
        partitioner: Callable[[Any, int], int],
        key_selector: Callable[[Any], Any],
        operator_name: str = "",
    ) -> None:
        super().__init__()
        self.partitioner = partitioner
        self.key_selector = key_selector
        self.operator_name = operator_name

    def route(self, values: list[Any], timestamps: list[Any] | None) -> Routed:
        n, part, ks = self.num_channels, self.partitioner, self.key_selector
        targets = [part(ks(v), n) for v in values]
        for target, value in zip(targets, values):
            if not (isinstance(target, int) and 0 <= target < n):
                raise ValueError(
                    f"custom partitioner after '{self.operator_name}' returned {target!r} for "
                    f"record {value!r}; it must return an int in [0, {n})"
                )
        return _split(values, timestamps, targets, n)


def connected_consumers(
    partitioner: StreamPartitioner, producer: int, producers: int, consumers: int
) -> list[int]:
    """The consumer subtasks producer subtask ``producer`` has channels to, in channel order.

    All-to-all for every partitioner except the pointwise ones: forward connects i -> i; rescale
    spreads producers over consumers as Flink's POINTWISE distribution pattern does.
    """
    if not partitioner.is_pointwise:
        return list(range(consumers))
    if isinstance(partitioner, ForwardPartitioner):
        return [producer]
    if producers >= consumers:
        return [producer * consumers // producers]
    start = (producer * consumers + producers - 1) // producers
    end = ((producer + 1) * consumers + producers - 1) // producers
    return list(range(start, end))
