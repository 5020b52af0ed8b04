"""Operator (non-keyed) state: list, union list and broadcast state of one operator subtask.

Each state has a redistribution mode (Flink's ``OperatorStateHandle.Mode``: ``list``,
``union``, ``broadcast``) that says what a subtask gets back after a restore with a different
parallelism. State names are one namespace across the three modes: registering a name with
another mode raises ``StateError``.

Threading: one backend per subtask, used only from its loop thread; no locks. Cost: state
operations are list/dict operations; ``snapshot()``/``redistribute()`` are O(state size).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import pickle
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from undertow.core import pickling
from undertow.core.errors import StateError
from undertow.state.descriptors import (
    BroadcastState,
    ListState,
    ListStateDescriptor,
    MapStateDescriptor,
    ReadOnlyBroadcastState,
)
from undertow.state.key_groups import state_entries, state_key, user_items, user_keys
from undertow.state.value_types import put_all_entries

_MAGIC = b"UOPS"
_VERSION = 1
_HEADER = struct.Struct(">4sBI")

LIST = "list"
UNION = "union"
BROADCAST = "broadcast"


class OperatorListState(ListState[Any]):
    """A list of elements of one subtask (split or union redistribution)."""

    def __init__(self, name: str, elements: list[Any]) -> None:
        self.name = name
        self._elements = elements

    def get(self) -> Iterable[Any]:
        return list(self._elements)

    def add(self, value: Any) -> None:
        if value is None:
            raise StateError(f"operator list state {self.name!r}: cannot add None")
        self._elements.append(value)

    def add_all(self, values: list[Any]) -> None:
        values = list(values or ())
        self._check(values)
        self._elements.extend(values)

    def update(self, values: list[Any]) -> None:
        values = list(values or ())
        self._check(values)
        self._elements[:] = values

    def clear(self) -> None:
        self._elements.clear()

    def _check(self, values: list[Any]) -> None:
        if any(v is None for v in values):
            raise StateError(f"operator list state {self.name!r}: cannot add None")

    def __repr__(self) -> str:
        return f"OperatorListState({self.name!r}, {len(self._elements)} elements)"


class HeapBroadcastState(BroadcastState[Any, Any]):
    """The broadcast map of one subtask; views are copies, safe to change while iterating.

    Its keys are equal as Flink's (a Java map: ``Double.equals``): ``0.0`` and ``-0.0`` two
    entries, every NaN one. Held in :func:`~undertow.state.key_groups.state_key` form, given
    back as users wrote them (``-0.0`` the float); an int or str key pays two ``is`` tests."""

    def __init__(self, name: str, entries: dict[Any, Any]) -> None:
        self.name = name
        self._entries = entries

    def get(self, key: Any) -> Any:
        key = state_key(key)
        return self._entries.get(key)

    def put(self, key: Any, value: Any) -> None:
        key = state_key(key)
        self._entries[key] = value

    def put_all(self, mapping: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        self._entries.update(state_entries(put_all_entries(mapping, self.name)))

    def remove(self, key: Any) -> None:
        key = state_key(key)
        self._entries.pop(key, None)

    def contains(self, key: Any) -> bool:
        key = state_key(key)
        return key in self._entries

    def items(self) -> Iterable[tuple[Any, Any]]:
        return user_items(self._entries.items())

    def keys(self) -> Iterable[Any]:
        return user_keys(self._entries)

    def values(self) -> Iterable[Any]:
        return list(self._entries.values())

    def is_empty(self) -> bool:
        return not self._entries

    def clear(self) -> None:
        self._entries.clear()

    def __repr__(self) -> str:
        return f"HeapBroadcastState({self.name!r}, {len(self._entries)} entries)"


class ReadOnlyBroadcastStateView(ReadOnlyBroadcastState[Any, Any]):
    """What the keyed side of a broadcast-connected operator sees: reads only.

    Writing from the keyed side would let subtasks diverge, so ``clear`` raises ``StateError``.
    """

    def __init__(self, state: BroadcastState[Any, Any]) -> None:
        self._state = state

    def get(self, key: Any) -> Any:
        return self._state.get(key)

    def contains(self, key: Any) -> bool:
        return self._state.contains(key)

    def items(self) -> Iterable[tuple[Any, Any]]:
        return self._state.items()

    def keys(self) -> Iterable[Any]:
        return self._state.keys()

    def values(self) -> Iterable[Any]:
        return self._state.values()

    def is_empty(self) -> bool:
        return self._state.is_empty()

    def clear(self) -> None:
        raise StateError("broadcast state is read-only here (only the broadcast side may write)")

    def __contains__(self, key: object) -> bool:
        return self._state.contains(key)

    def __repr__(self) -> str:
        return f"ReadOnlyBroadcastStateView({self._state!r})"


class OperatorStateBackend:
    """Non-keyed state of one operator subtask (see the module docstring)."""

    def __init__(self, operator_name: str = "") -> None:
        self.operator_name = operator_name
        #: name -> (mode, elements list or entries dict); shared with the state objects.
        self._data: dict[str, tuple[str, Any]] = {}
        self._states: dict[str, Any] = {}

    def get_list_state(self, descriptor: ListStateDescriptor) -> ListState[Any]:
        """List state split evenly across subtasks on rescale."""
        state: ListState[Any] = self._register(descriptor.name, LIST)
        return state

    def get_union_list_state(self, descriptor: ListStateDescriptor) -> ListState[Any]:
        """List state of which every subtask gets the union of all subtasks on restore."""
        state: ListState[Any] = self._register(descriptor.name, UNION)
        return state

    def get_broadcast_state(self, descriptor: MapStateDescriptor) -> BroadcastState[Any, Any]:
        """Map state that is the same on every subtask; subtask 0's copy is restored."""
        state: BroadcastState[Any, Any] = self._register(descriptor.name, BROADCAST)
        return state

    def get_read_only_broadcast_state(
        self, descriptor: MapStateDescriptor
    ) -> ReadOnlyBroadcastState[Any, Any]:
        return ReadOnlyBroadcastStateView(self.get_broadcast_state(descriptor))

    def _register(self, name: str, mode: str) -> Any:
        known = self._data.get(name)
        if known is not None and known[0] != mode:
            raise StateError(
                f"operator {self.operator_name!r}: state {name!r} is {known[0]} operator state "
                f"(registered before or restored), cannot use it as {mode} state"
            )
        state = self._states.get(name)
        if state is None:
            content: Any = known[1] if known is not None else {} if mode == BROADCAST else []
            self._data[name] = (mode, content)
            if mode == BROADCAST:
                state = HeapBroadcastState(name, content)
            else:
                state = OperatorListState(name, content)
            self._states[name] = state
        return state

    def has_state(self) -> bool:
        """True if any operator state was registered or restored (empty ones included)."""
        return bool(self._data)

    def snapshot(self) -> bytes:
        return _encode(self._data)

    def restore(self, blob: bytes) -> None:
        """Load one blob (as returned by ``snapshot`` or ``redistribute``) into this backend."""
        for name, (mode, content) in _decode(blob, self.operator_name).items():
            if mode == BROADCAST:  # an unpickled NaN is a fresh object (state_key form)
                content = state_entries(content)
            known = self._data.get(name)
            if known is None:
                self._data[name] = (mode, content)
            elif known[0] != mode:
                raise StateError(
                    f"operator {self.operator_name!r}: restored state {name!r} is {mode} "
                    f"operator state, but it is registered as {known[0]} state"
                )
            elif mode == BROADCAST:
                known[1].update(content)
            else:
                known[1].extend(content)

    def dispose(self) -> None:
        self._data.clear()
        self._states.clear()

    @staticmethod
    def redistribute(snapshots: list[bytes], new_parallelism: int) -> list[bytes]:
        """The blobs for ``new_parallelism`` subtasks from the blobs of the old subtasks.

        Pure: ``snapshots[i]`` is old subtask ``i``'s blob; result ``[j]`` is for new subtask
        ``j``. Redistribution per mode as in the module docstring.
        """
        if new_parallelism < 1:
            raise ValueError(f"new parallelism must be >= 1, got {new_parallelism}")
        old = [_decode(blob, "<redistribute>") for blob in snapshots]
        new: list[dict[str, tuple[str, Any]]] = [{} for _ in range(new_parallelism)]
        modes: dict[str, str] = {}
        for index, states in enumerate(old):
            for name, (mode, _) in states.items():
                if modes.setdefault(name, mode) != mode:
                    raise StateError(
                        f"operator state {name!r} is {modes[name]} state in one subtask and "
                        f"{mode} state in subtask {index}"
                    )
        for name, mode in modes.items():
            parts = [states[name][1] if name in states else None for states in old]
            if mode == BROADCAST:
                first: dict[Any, Any] = next((p for p in parts if p is not None), {})
                for target in new:
                    target[name] = (mode, dict(first))
                continue
            lists: list[list[Any]] = [p if p is not None else [] for p in parts]
            if mode == UNION:
                union = [e for part in lists for e in part]
                for target in new:
                    target[name] = (mode, list(union))
            elif len(lists) == new_parallelism:
                for target, part in zip(new, lists):
                    target[name] = (mode, list(part))
            else:
                for target, part in zip(new, split_evenly(lists, new_parallelism)):
                    target[name] = (mode, part)
        return [_encode(states) for states in new]

    def __repr__(self) -> str:
        return f"OperatorStateBackend({self.operator_name!r}, {sorted(self._data)})"


def split_evenly(parts: list[list[Any]], n: int) -> list[list[Any]]:
    """Concatenate ``parts`` and cut into ``n`` contiguous slices, sizes differing by <= 1."""
    elements = [e for part in parts for e in part]
    base, extra = divmod(len(elements), n)
    slices: list[list[Any]] = []
    start = 0
    for i in range(n):
        end = start + base + (1 if i < extra else 0)
        slices.append(elements[start:end])
        start = end
    return slices


def _encode(states: dict[str, tuple[str, Any]]) -> bytes:
    body = pickling.dumps(states)
    return _HEADER.pack(_MAGIC, _VERSION, zlib.crc32(body)) + body


def _decode(blob: bytes, operator_name: str) -> dict[str, tuple[str, Any]]:
    where = f"operator {operator_name!r}"
    if len(blob) < _HEADER.size:
        raise StateError(f"{where}: operator state blob of {len(blob)} bytes is truncated")
    magic, version, crc = _HEADER.unpack_from(blob)
    if magic != _MAGIC:
        raise StateError(f"{where}: not an operator state blob (magic {magic!r})")
    if version != _VERSION:
        raise StateError(f"{where}: operator state blob version {version}, expected {_VERSION}")
    body = memoryview(blob)[_HEADER.size :]
    if zlib.crc32(body) != crc:
        raise StateError(f"{where}: operator state blob checksum mismatch (corrupt data)")
    try:
        states: dict[str, tuple[str, Any]] = pickle.loads(body)
    except Exception as err:
        raise StateError(f"{where}: cannot unpickle operator state blob: {err}") from err
    return states
