"""Key groups: key -> stable hash -> key group -> owning subtask (Flink's KeyGroupRangeAssignment).

The hash must be the same in every process (Python's ``hash()`` of ``str`` is salted per
process), so keys are hashed by value: ints by a murmur3 finalizer, ``str``/``bytes`` by CRC-32,
floats by their ``hex()``, tuples and ``Row`` by combining their fields (lists and dicts like
their :func:`hashable_key` tuple), other objects by CRC-32 of their pickle. Sets are refused
(their order is per process), and so is an object of a class of the job script (``__main__``),
with :class:`~undertow.core.errors.KeyTypeError` on every target: pickle cannot name its class
on a worker. Invariant: a key's group never depends on the keys hashed before it; every cache
keyed by the key (here, the partitioner's, the heap's, timers') looks up and stores only keys
of which :func:`groups_by_equality` holds (``1 == 1.0 == True`` as dict keys, with other
hashes). Cost: an int key, a few arithmetic operations; a repeated str, bytes or tuple of such
key (a ``Row`` as its tuple), or a non-zero float, one dict lookup; other keys, a hash on
every call. The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import math
import pickle
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from undertow.common.row import Row
from undertow.core.errors import KeySelectorError, KeyTypeError, StateError

_MASK32 = 0xFFFFFFFF
_CACHE_LIMIT = 1 << 16
_cache: dict[Any, int] = {}
_float_cache: dict[float, int] = {}
#: Exact types whose equal values have equal stable hashes (``True == 1`` and both hash as 1).
PLAIN_KEY_TYPES: frozenset[type] = frozenset({str, bytes, int, bool, type(None)})


def _fmix32(h: int) -> int:
    h &= _MASK32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    return h


def hashable_key(key: Any) -> Any:
    """The equal-content hashable form of a key: lists become tuples and dicts tuples of their
    (key, value) pairs (recursively), bytearrays bytes; other keys are returned as they are.
    PyFlink keys by value, so ``key_by(lambda x: [x[0]])`` is a valid key; keyed state stores
    such a key in this form, and :func:`stable_hash` gives both forms the same hash."""
    if isinstance(key, list):
        return tuple(hashable_key(k) for k in key)
    if isinstance(key, dict):
        return tuple((hashable_key(k), hashable_key(v)) for k, v in key.items())
    if isinstance(key, bytearray):
        return bytes(key)
    return key


def require_hashable(key: Any, operator_name: str) -> Any:
    """The keyed state backends' answer to a key whose ``hash()`` raised: its
    :func:`hashable_key` form (a list key is kept as a tuple, in the same key group), or a
    :class:`~undertow.core.errors.StateError` naming the operator, the key and what in it
    cannot be hashed (a set, in or out of a list). Called only after ``hash()`` failed: no
    cost on the record path."""
    hashable = hashable_key(key)
    try:
        hash(hashable)
    except TypeError as err:
        raise StateError(
            f"operator {operator_name!r}: key {key!r} ({type(key).__name__}) is not hashable "
            f"({err}); keys must be hashable values, lists or dicts of them"
        ) from err
    return hashable


def _hash_uncached(key: Any) -> int:
    if isinstance(key, (list, dict)):
        return _hash_uncached(hashable_key(key))
    if isinstance(key, bool):
        return _fmix32(int(key))
    if isinstance(key, int):
        return _fmix32(key ^ (key >> 32))
    if isinstance(key, str):
        return _fmix32(zlib.crc32(key.encode("utf-8", "surrogatepass")))
    if isinstance(key, (bytes, bytearray)):
        return _fmix32(zlib.crc32(key))
    if isinstance(key, float):
        return _hash_uncached(key.hex())
    if isinstance(key, tuple):  # includes Row and named tuples
        h = 17
        for item in key:
            h = (h * 31 + stable_hash(item)) & _MASK32
        return _fmix32(h)
    if key is None:
        return 0
    if isinstance(key, (set, frozenset)):
        # a set's order (and so its pickle) follows the per-process str hash: workers would
        # disagree on its key group, and RocksDB on its bytes after a restart
        raise KeyTypeError(
            f"key {key!r:.200} is a {type(key).__name__}, whose order differs between "
            "processes, so workers cannot agree on its key group. Key by a tuple instead "
            "(for example tuple(sorted(the_set)))"
        )
    return _fmix32(zlib.crc32(_pickled_key(key)))


def _pickled_key(key: Any) -> bytes:
    """``key``'s pickle, or :class:`KeyTypeError` naming the key when it has none that every
    process shares (see the module docstring)."""
    cls = type(key)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if cls.__module__ == "__main__":
        raise KeyTypeError(
            f"key {key!r:.200} is a {name}, a class defined in the job script: workers cannot "
            "hash it the same way in every process. Key by a str, an int or a tuple of them "
            "(for example the object's fields), or move the class to a module workers import"
        ) from None
    try:
        return pickle.dumps(key, protocol=4)
    except Exception as err:
        raise KeyTypeError(
            f"key {key!r:.200} of type {name} cannot be hashed to a key group: it does not "
            f"pickle ({type(err).__name__}: {err}). Key by a str, an int or a tuple of them"
        ) from err


def groups_by_equality(key: Any) -> bool:
    """Whether ``key`` may index a cache of key groups: for two keys of which this is true,
    ``a == b`` implies the same stable hash. True of :data:`PLAIN_KEY_TYPES` and of tuples
    (exactly ``tuple``) of such keys; false of floats, whose ``1.0 == 1`` and ``-0.0 == 0.0``
    hash differently, of other numbers, of unhashable keys and of every other type. A cache
    must check it before its lookup, not only before its store (a lookup of ``1.0`` would find
    the entry of ``1``). Cost: a type check; a tuple's, one per field."""
    t = type(key)
    if t in PLAIN_KEY_TYPES:
        return True
    if t is not tuple:
        return False
    for item in key:  # a loop: faster than all() or issuperset(map()) on a short tuple
        if type(item) not in PLAIN_KEY_TYPES and not groups_by_equality(item):
            return False
    return True


#: The one NaN every NaN key becomes (:func:`state_key`): a dict finds it by identity.
CANONICAL_NAN = float("nan")


class _NegativeZero(float):
    """``-0.0`` as keyed state holds it (:func:`state_key`): Python's ``-0.0 == 0.0`` would
    make the two one dict entry where both are in one key group, while Flink's keys (Java's
    ``Double.equals``) are two. Its value, ``hex()``, stable hash and key group are
    ``-0.0``'s; it equals only itself, hashes apart, and pickles as :data:`NEGATIVE_ZERO`."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return other is self

    def __ne__(self, other: object) -> bool:
        return other is not self

    def __hash__(self) -> int:
        return _NEGATIVE_ZERO_HASH

    def __reduce__(self) -> str:
        return "NEGATIVE_ZERO"

    def __repr__(self) -> str:
        return "-0.0"


_NEGATIVE_ZERO_HASH = hash("undertow -0.0 key")
#: The one ``-0.0`` every ``-0.0`` key becomes in keyed state (:func:`state_key`).
NEGATIVE_ZERO = _NegativeZero(-0.0)


def state_key(key: Any) -> Any:
    """``key`` as keyed state stores it in a dict: every float NaN (also inside a tuple)
    replaced by :data:`CANONICAL_NAN` and every ``-0.0`` by :data:`NEGATIVE_ZERO`. Java's
    ``Double.equals``, which Flink keys by, holds all NaNs equal and ``0.0``, ``-0.0`` apart,
    while Python's NaN equals nothing (a dict would give every NaN record a fresh entry) and
    ``-0.0`` equals ``0.0`` (one entry for two keys where both are in one key group: odd max
    parallelisms). The key group stays the key's (:func:`stable_hash` of either form is the
    same); :func:`user_key` turns it back. Only for a key of which :func:`groups_by_equality`
    is false (no other key holds a float); cost: a type check, a tuple's one per field, and
    a tuple is rebuilt only when it holds a NaN or a ``-0.0``."""
    t = type(key)
    if t is float:
        if key != key:
            return CANONICAL_NAN
        return NEGATIVE_ZERO if not key and math.copysign(1.0, key) < 0.0 else key
    if t is tuple:
        for item in key:  # the common tuple (no float, no tuple field) without another call
            t = type(item)
            if (t is float or t is tuple) and _needs_state_form(key):
                return tuple(state_key(item) for item in key)
    return key


def _needs_state_form(key: tuple[Any, ...]) -> bool:
    for item in key:
        t = type(item)
        if t is float:
            if item != item or (not item and math.copysign(1.0, item) < 0.0):
                return True
        elif t is tuple and _needs_state_form(item):
            return True
    return False


def state_entries(entries: dict[Any, Any]) -> dict[Any, Any]:
    """``entries`` with their keys in :func:`state_key` form: restored entries (key or
    ``(key, namespace)`` -> entry; a snapshot of an earlier version holds ``-0.0`` as a float,
    and an unpickled NaN is a fresh one), or a map state's entries (user key -> value).
    ``entries`` itself when no key changes; cost: a type check per key."""
    for skey in entries:
        t = type(skey)
        if (t is float or t is tuple) and state_key(skey) is not skey:
            return {state_key(k): entry for k, entry in entries.items()}
    return entries


def user_key(key: Any) -> Any:
    """The key a user sees of a :func:`state_key` form, and the one a byte-keyed store
    (RocksDB) encodes: :data:`NEGATIVE_ZERO` back to the float ``-0.0`` (also inside a
    tuple), whose ``==`` is Python's again and whose pickle is already not ``0.0``'s (DB keys
    stay those of earlier versions); other keys as they are. Cost: a type check, a tuple's
    one per field."""
    t = type(key)
    if t is _NegativeZero:
        return -0.0
    if t is tuple and _holds_negative_zero(key):
        return tuple(user_key(item) for item in key)
    return key


def _holds_negative_zero(key: tuple[Any, ...]) -> bool:
    for item in key:
        t = type(item)
        if t is _NegativeZero or (t is tuple and _holds_negative_zero(item)):
            return True
    return False


def user_keys(keys: Iterable[Any]) -> list[Any]:
    """``keys`` (a map state's user keys in :func:`state_key` form) as a list of the keys
    users see (:func:`user_key`). Cost: the list and a type test per key; a map holding a
    ``-0.0`` or a tuple key pays :func:`user_key` per key."""
    found = list(keys)
    for k in found:
        t = type(k)
        if t is _NegativeZero or t is tuple:
            return [user_key(k) for k in found]
    return found


def user_items(items: Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """``items`` (``(map key in state_key form, value)``) as a list, keys as users see them
    (:func:`user_keys`; the same cost)."""
    found = list(items)
    for k, _ in found:
        t = type(k)
        if t is _NegativeZero or t is tuple:
            return [(user_key(k), v) for k, v in found]
    return found


def stored_key(key: Any) -> Any:
    """The form of a key (a user's or a :func:`state_key` form) that a byte-keyed store
    (RocksDB) encodes: every NaN :data:`CANONICAL_NAN` (whose pickle is one byte string, while
    NaNs' differ by sign and payload), :data:`NEGATIVE_ZERO` the float ``-0.0`` (whose pickle
    is not ``0.0``'s), also inside a tuple; other keys as they are. Decoded, it is the key
    users see. Cost: a type test, a tuple's a scan (two when it holds a NaN or ``-0.0``)."""
    t = type(key)
    if t is float:
        return CANONICAL_NAN if key != key else key
    if t is _NegativeZero:
        return -0.0
    if t is tuple:
        return user_key(state_key(key))
    return key


def stable_hash(key: Any) -> int:
    """A 32-bit hash of ``key`` that is the same in every process and run (and does not depend
    on the keys hashed before it: see the module docstring)."""
    t = type(key)
    if t is int:
        return _fmix32(key ^ (key >> 32))
    # groups_by_equality written out (a call costs more than its checks), floats apart
    if t is str:
        cache = _cache
    elif t is tuple:
        for item in key:
            if type(item) not in PLAIN_KEY_TYPES and not groups_by_equality(item):
                return _hash_uncached(key)  # (1.0,) == (1,), another hash
        cache = _cache
    elif t is float and key:  # not ±0.0, which are equal with different hashes
        cache = _float_cache
    elif t in PLAIN_KEY_TYPES:
        cache = _cache
    elif isinstance(key, Row):  # hashes as its fields' tuple, which the cache takes
        return stable_hash(tuple(key))
    else:
        return _hash_uncached(key)
    try:
        return cache[key]
    except KeyError:
        pass
    h = _hash_uncached(key)
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = h
    return h


def assign_to_key_group(key: Any, max_parallelism: int) -> int:
    """The key group of ``key``: in ``[0, max_parallelism)``."""
    return stable_hash(key) % max_parallelism


def key_group_range_for_subtask(max_parallelism: int, parallelism: int, index: int) -> range:
    """The key groups subtask ``index`` of ``parallelism`` owns (contiguous, Flink's formula)."""
    check_parallelism(max_parallelism, parallelism)
    start = (index * max_parallelism + parallelism - 1) // parallelism
    end = ((index + 1) * max_parallelism - 1) // parallelism
    return range(start, end + 1)


def subtask_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    """The subtask that owns ``key_group`` (inverse of :func:`key_group_range_for_subtask`)."""
    return key_group * parallelism // max_parallelism


def check_parallelism(max_parallelism: int, parallelism: int) -> None:
    if not 0 < parallelism <= max_parallelism:
        raise ValueError(
            f"parallelism {parallelism} must be between 1 and max parallelism {max_parallelism}"
        )


def selector_failed(
    value: Any, err: Exception, selector: Callable[[Any], Any] | None = None
) -> KeySelectorError:
    """The error for a ``key_by`` key selector that raised ``err`` on ``value``: it names the
    selector (its qualified name: ``MyKeySelector.get_key``, ``main.<locals>.<lambda>``) and
    the record; the failure report names the key_by as the operator
    (:data:`~undertow.core.errors.KeySelectorError.OPERATOR`), whichever ran it (the
    producer's partitioner, or the keyed operator)."""
    name = "" if selector is None else f" {selector_name(selector)}"
    return KeySelectorError(
        f"the key selector{name} of key_by() raised {type(err).__name__}: {err} on the record "
        f"{value!r:.200}"
    )


def selector_name(selector: Callable[[Any], Any]) -> str:
    """A key selector's qualified name (a wrapper's, of the function it wraps), else its
    type's name. Cost: only on failure."""
    name = getattr(selector, "__qualname__", None)  # a callable object may have none
    return name if isinstance(name, str) else type(selector).__name__


def selector_failure(
    values: Sequence[Any], selector: Callable[[Any], Any] | None, err: Exception
) -> KeySelectorError | None:
    """:func:`selector_failed` for the first of ``values`` on which ``selector`` raises an
    error like ``err`` (same type and message), or None: ``err`` came from elsewhere. Called
    only after a batch failed, to tell a keyed operator's selector from its function; it runs
    the selector again on the batch's records up to the failing one."""
    if selector is None:
        return None
    for value in values:
        try:
            selector(value)
        except Exception as again:
            if type(again) is type(err) and str(again) == str(err):
                return selector_failed(value, again, selector)
            return None
    return None
