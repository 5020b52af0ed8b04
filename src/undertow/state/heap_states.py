"""Storage tables and the state objects of the heap keyed state backend (without TTL).

One :class:`StateTable` per state name: per owned key group a ``void`` dict (key -> entry in
``VOID_NAMESPACE``) and a ``windowed`` dict (``(key, namespace)`` -> entry). Invariants: an
entry never holds ``None`` or an empty container (clearing removes it); without a current key
the :class:`KeyContext` points at an :class:`UnkeyedDict` that raises ``StateError``.

Threading: used only from the owning subtask's loop thread; no locks. Cost: ``value()``,
``update()`` and ``add()`` are a list index plus one or two dict operations; ``ListState.get()``
and the ``MapState`` views copy (snapshot-safe, O(entry size)).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from undertow.core.errors import StateError
from undertow.state.backend import VOID_NAMESPACE, InternalKvState
from undertow.state.descriptors import (
    AggregatingState,
    ListState,
    MapState,
    MapStateDescriptor,
    ReducingState,
    StateDescriptor,
    ValueState,
    aggregate_function_of,
    reducer_of,
)
from undertow.state.key_groups import state_entries, state_key, user_items, user_keys
from undertow.state.value_types import entry_check, put_all_entries, value_check

#: Marks "no entry" where ``None`` could be a legitimate reduce/aggregate result.
ABSENT: Any = object()


class UnkeyedDict(dict[Any, Any]):
    """The dict a state reads when no key is set: every access raises ``StateError``."""

    def __init__(self, operator_name: str) -> None:
        super().__init__()
        self.operator_name = operator_name

    def _fail(self, *_: Any, **__: Any) -> Any:
        raise StateError(
            f"operator {self.operator_name!r}: keyed state accessed without a current key "
            "(outside processElement/onTimer of a keyed stream, or after dispose)"
        )

    get = __getitem__ = __setitem__ = __delitem__ = __contains__ = pop = setdefault = _fail


class KeyContext:
    """The current key and its key group offset; the backend writes it, state objects read it."""

    __slots__ = ("key", "offset")

    def __init__(self, unkeyed_offset: int) -> None:
        self.key: Any = None
        self.offset = unkeyed_offset


class StateTable:
    """All entries of one state name in this backend (see the module docstring)."""

    __slots__ = ("kind", "name", "ttl", "void", "void_by_key", "windowed")

    def __init__(self, name: str, kind: str, ttl: bool, groups: int, unkeyed: UnkeyedDict) -> None:
        self.name = name
        self.kind = kind
        self.ttl = ttl
        self.void: list[dict[Any, Any]] = [{} for _ in range(groups)]
        self.void.append(unkeyed)
        self.windowed: list[dict[Any, Any]] = [{} for _ in range(groups)]
        self.windowed.append(unkeyed)
        #: For batch folds outside key context (:mod:`.heap_fold`): a key (hashable form) ->
        #: the ``void`` dict of its key group, one lookup instead of the key's offset and then
        #: the list. Never stale: a table's dicts are made here and never replaced, and a key's
        #: group never changes; the backend bounds it.
        self.void_by_key: dict[Any, dict[Any, Any]] = {}

    @property
    def groups(self) -> int:
        return len(self.void) - 1

    def is_empty_at(self, offset: int) -> bool:
        return not self.void[offset] and not self.windowed[offset]

    def clear(self) -> None:
        for i in range(self.groups):
            self.void[i].clear()
            self.windowed[i].clear()
        self.void_by_key.clear()


class HeapState(InternalKvState[Any]):
    """Common part of heap state objects: the table, the key context and the namespace."""

    kind: ClassVar[str]

    def __init__(self, table: StateTable, ctx: KeyContext, descriptor: StateDescriptor) -> None:
        self._table = table
        self._ctx = ctx
        self.descriptor = descriptor
        self._namespace: Any = VOID_NAMESPACE
        self._void = True
        self._tables = table.void
        #: The check of the declared type of what this state holds (:mod:`.value_types`).
        self.value_check = value_check(descriptor)

    def set_current_namespace(self, namespace: Any) -> None:
        self._namespace = namespace
        self._void = namespace is VOID_NAMESPACE
        self._tables = self._table.void if self._void else self._table.windowed

    @property
    def namespace(self) -> Any:
        return self._namespace

    @property
    def tables(self) -> list[dict[Any, Any]]:
        """Per key-group offset, the dict of entries in the current namespace (backend use)."""
        tables: list[dict[Any, Any]] = self._tables
        return tables

    @property
    def void_by_key(self) -> dict[Any, dict[Any, Any]]:
        """The table's key -> ``void`` dict of its key group cache (backend use)."""
        return self._table.void_by_key

    def _slot(self) -> tuple[dict[Any, Any], Any]:
        """The dict and storage key of the current key in the current namespace."""
        ctx = self._ctx
        if self._void:
            return self._tables[ctx.offset], ctx.key
        return self._tables[ctx.offset], (ctx.key, self._namespace)

    def _slot_in(self, namespace: Any) -> tuple[dict[Any, Any], Any]:
        ctx = self._ctx
        if namespace is VOID_NAMESPACE:
            return self._table.void[ctx.offset], ctx.key
        return self._table.windowed[ctx.offset], (ctx.key, namespace)

    def clear(self) -> None:
        table, skey = self._slot()
        table.pop(skey, None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._table.name!r})"


class MergingHeapState(HeapState):
    """A state whose entries of several namespaces can be merged (Flink's merging windows)."""

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        # Flink's order: remove and combine the sources, then fold the result into the target.
        merged = ABSENT
        for source in sources:
            table, skey = self._slot_in(source)
            entry = self._readable(table.pop(skey, ABSENT))
            if entry is not ABSENT:
                merged = entry if merged is ABSENT else self._merge(merged, entry)
        if merged is ABSENT:
            return
        table, skey = self._slot_in(target)
        existing = self._readable(table.get(skey, ABSENT))
        table[skey] = merged if existing is ABSENT else self._merge(existing, merged)

    def _readable(self, entry: Any) -> Any:
        """``entry`` as merge input, or ``ABSENT`` (TTL states drop expired parts here)."""
        return entry

    def _merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError


class HeapValueState(HeapState, ValueState[Any]):
    kind = "value"

    def value(self) -> Any:
        ctx = self._ctx
        if self._void:
            return self._tables[ctx.offset].get(ctx.key)
        return self._tables[ctx.offset].get((ctx.key, self._namespace))

    def update(self, value: Any) -> None:
        ctx = self._ctx
        skey = ctx.key if self._void else (ctx.key, self._namespace)
        if value is None:
            self._tables[ctx.offset].pop(skey, None)
            return
        check = self.value_check
        if check is not None:
            check(value)
        self._tables[ctx.offset][skey] = value


def check_element(state: HeapState, value: Any) -> None:
    if value is None:
        raise StateError(f"list state {state.descriptor.name!r}: cannot add None")
    check = state.value_check
    if check is not None:
        check(value)


class HeapListState(MergingHeapState, ListState[Any]):
    kind = "list"

    def stored_element(self, value: Any) -> Any:
        """``value`` as :meth:`add` stores it in the entry's list (checked; TTL states wrap
        it with its timestamp): what an append-only store writes (``rocksdb_states``)."""
        check_element(self, value)
        return value

    def get(self) -> Iterable[Any]:
        table, skey = self._slot()
        return list(table.get(skey, ()))

    def add(self, value: Any) -> None:
        check_element(self, value)
        table, skey = self._slot()
        entry = table.get(skey)
        if entry is None:
            table[skey] = [value]
        else:
            entry.append(value)

    def add_all(self, values: list[Any]) -> None:
        if not values:
            return
        for v in values:
            check_element(self, v)
        table, skey = self._slot()
        entry = table.get(skey)
        if entry is None:
            table[skey] = list(values)
        else:
            entry.extend(values)

    def update(self, values: list[Any]) -> None:
        table, skey = self._slot()
        if not values:
            table.pop(skey, None)
            return
        for v in values:
            check_element(self, v)
        table[skey] = list(values)

    def _merge(self, a: Any, b: Any) -> Any:
        a.extend(b)
        return a


class HeapReducingState(MergingHeapState, ReducingState[Any]):
    kind = "reducing"

    def __init__(self, table: StateTable, ctx: KeyContext, descriptor: StateDescriptor) -> None:
        super().__init__(table, ctx, descriptor)
        self._reduce = reducer_of(descriptor)

    def get(self) -> Any:
        ctx = self._ctx
        if self._void:
            return self._tables[ctx.offset].get(ctx.key)
        return self._tables[ctx.offset].get((ctx.key, self._namespace))

    def add(self, value: Any) -> None:
        if value is None:  # as Flink's HeapReducingState: adding null clears
            self.clear()
            return
        ctx = self._ctx
        table = self._tables[ctx.offset]
        skey = ctx.key if self._void else (ctx.key, self._namespace)
        current = table.get(skey, ABSENT)
        reduced = value if current is ABSENT else self._reduce(current, value)
        if self.value_check is not None:
            self.value_check(reduced)
        table[skey] = reduced

    def _merge(self, a: Any, b: Any) -> Any:
        return self._reduce(a, b)


class HeapAggregatingState(MergingHeapState, AggregatingState[Any, Any]):
    kind = "aggregating"

    def __init__(self, table: StateTable, ctx: KeyContext, descriptor: StateDescriptor) -> None:
        super().__init__(table, ctx, descriptor)
        self._fn = aggregate_function_of(descriptor)

    def get(self) -> Any:
        table, skey = self._slot()
        acc = table.get(skey, ABSENT)
        return None if acc is ABSENT else self._fn.get_result(acc)

    def add(self, value: Any) -> None:
        if value is None:  # as Flink's HeapAggregatingState: adding null clears
            self.clear()
            return
        table, skey = self._slot()
        acc = table.get(skey, ABSENT)
        if acc is ABSENT:
            acc = self._fn.create_accumulator()
        acc = self._fn.add(value, acc)
        if self.value_check is not None:
            self.value_check(acc)
        table[skey] = acc

    def _merge(self, a: Any, b: Any) -> Any:
        return self._fn.merge(a, b)


class HeapMapState(HeapState, MapState[Any, Any]):
    """A map per key and namespace. Its user keys are held in
    :func:`~undertow.state.key_groups.state_key` form, equal as Java's ``equals`` holds them
    (Flink's ``MapState``): ``0.0`` and ``-0.0`` two entries, every NaN one; reads give them
    back as users wrote them (``-0.0`` the float). An int or str key pays a type test."""

    kind = "map"

    def __init__(self, table: StateTable, ctx: KeyContext, descriptor: StateDescriptor) -> None:
        super().__init__(table, ctx, descriptor)
        #: The check of the declared key and value types of an entry (:mod:`.value_types`).
        self.entry_check = (
            entry_check(descriptor) if isinstance(descriptor, MapStateDescriptor) else None
        )

    def checked(self, mapping: dict[Any, Any]) -> dict[Any, Any]:
        """``mapping``, each of its entries checked (``put_all``)."""
        check = self.entry_check
        if check is not None:
            for key, value in mapping.items():
                check(key, value)
        return mapping

    def _map_slot(self, key: Any) -> tuple[dict[Any, Any], Any, Any]:
        """:meth:`_slot` and map key ``key`` in ``state_key`` form, in one call: the one home
        of the map states' key form (an int or str key pays a type test, no call)."""
        t = type(key)
        if t is float or t is tuple:
            key = state_key(key)
        ctx = self._ctx
        if self._void:
            return self._tables[ctx.offset], ctx.key, key
        return self._tables[ctx.offset], (ctx.key, self._namespace), key

    def get(self, key: Any) -> Any:
        table, skey, key = self._map_slot(key)
        entry = table.get(skey)
        return None if entry is None else entry.get(key)

    def put(self, key: Any, value: Any) -> None:
        if self.entry_check is not None:
            self.entry_check(key, value)
        table, skey, key = self._map_slot(key)
        entry = table.get(skey)
        if entry is None:
            table[skey] = {key: value}
        else:
            entry[key] = value

    def put_all(self, mapping: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        entries = put_all_entries(mapping, self.descriptor.name)
        if not entries:
            return
        mapping = state_entries(self.checked(entries))
        table, skey = self._slot()
        entry = table.get(skey)
        if entry is None:
            table[skey] = dict(mapping)
        else:
            entry.update(mapping)

    def remove(self, key: Any) -> None:
        table, skey, key = self._map_slot(key)
        entry = table.get(skey)
        if entry is not None:
            entry.pop(key, None)
            if not entry:
                del table[skey]

    def contains(self, key: Any) -> bool:
        table, skey, key = self._map_slot(key)
        entry = table.get(skey)
        return entry is not None and key in entry

    def items(self) -> Iterable[tuple[Any, Any]]:
        table, skey = self._slot()
        return user_items(table.get(skey, {}).items())

    def keys(self) -> Iterable[Any]:
        table, skey = self._slot()
        return user_keys(table.get(skey, ()))

    def values(self) -> Iterable[Any]:
        table, skey = self._slot()
        return list(table.get(skey, {}).values())

    def is_empty(self) -> bool:
        table, skey = self._slot()
        return skey not in table


#: The state class for each descriptor kind (without TTL).
STATE_CLASSES: dict[str, type[HeapState]] = {
    cls.kind: cls
    for cls in (
        HeapValueState,
        HeapListState,
        HeapMapState,
        HeapReducingState,
        HeapAggregatingState,
    )
}
