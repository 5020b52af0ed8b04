"""A ``key_by`` with a ``key_type``: every key the selector returns must fit the declared type.

In PyFlink the key is written with the declared type's serializer, which refuses a value of
another Python type (an ``int`` for ``Types.STRING()``). :func:`with_key_type` wraps the
selector in a check that raises :class:`~undertow.core.errors.KeyTypeError` naming the key,
its type and the declared type, with the record as a note; the task's failure names the
operator and subtask (the producer's: its partitioner then runs the selector on every record,
also with one channel). A key comes back as PyFlink's serializer gives it: ``DOUBLE`` or
``FLOAT`` a ``float`` (``1`` and ``1.0`` one key; ``FLOAT`` rounded to 32 bits), ``ROW`` a
``Row`` with the type's field names (also made of a tuple); other keys as the selector made them.

Cost: nothing without a ``key_type`` (no wrapper). With one, per key a call and a cheap test
true only of keys that fit (``str`` for ``STRING``, an ``int`` in ``LONG``'s range, an exact
tuple whose fields pass theirs); only when it is false, the type's full ``check``
(microseconds). Pure; the wrappers are closures called on the task thread."""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

from undertow.common.row import row_class
from undertow.common.type_fits import surely_fits
from undertow.common.typeinfo import (
    BasicType,
    BasicTypeInfo,
    RowTypeInfo,
    TypeInformation,
)
from undertow.common.typeinfo_basic import type_to_check
from undertow.core.errors import KeyTypeError, note_record
from undertow.state.key_groups import PLAIN_KEY_TYPES


def with_key_type(
    selector: Callable[[Any], Any], key_type: Any, what: str, *, route_only: bool = False
) -> Callable[[Any], Any]:
    """``selector`` itself without a ``key_type`` (or with ``PICKLED_BYTE_ARRAY``, which
    takes any key); else the selector whose keys are checked (see the module docstring). A
    ``key_type`` that is no type information is refused naming ``what``. ``route_only``: the
    keys only pick channels (the partitioner's), so a ``ROW`` key that is a fitting exact
    tuple stays one: its key group is that of the ``Row`` it stands for (``stable_hash``),
    and making the ``Row`` cost 190 ns a key."""
    key_type = type_to_check(key_type, f"{what}: key_type")
    if key_type is None:
        return selector
    fits = surely_fits(key_type)
    form = _floating_form(key_type) or _row_form(key_type)
    if form is not None:
        # a fitting tuple is formed unless only its key group counts and the Row keeps its
        # fields as they are (no field a FLOAT or another type whose values conform changes)
        formed = not (route_only and _row_keeps_fields(key_type))
        if formed and _rows_interned(key_type):
            return _interning(selector, key_type, fits, form)

        @functools.wraps(selector)  # a failure names the user's selector
        def checked_formed(value: Any) -> Any:
            key = selector(value)
            if not fits(key):
                key = _checked_fully(key_type, key, value)
            elif not formed:
                return key
            try:
                return form(key)
            except OverflowError as err:  # 1e39 as a 32-bit FLOAT, 10**400 as a DOUBLE
                raise _refusal(key_type, key, value, str(err)) from err

        return checked_formed

    @functools.wraps(selector)
    def checked(value: Any) -> Any:
        key = selector(value)
        if fits(key):
            return key
        return _checked_fully(key_type, key, value)

    return checked


_FLOAT32 = struct.Struct("<f")


def _as_double(key: Any) -> Any:
    return key if type(key) is float else float(key)


def _as_float32(key: Any) -> float:
    value: float = _FLOAT32.unpack(_FLOAT32.pack(key))[0]
    return value


def _floating_form(key_type: TypeInformation) -> Callable[[Any], Any] | None:
    """How PyFlink's serializer of ``key_type`` hands back a fitting key when that is not the
    key itself: ``DOUBLE`` as a ``float``, ``FLOAT`` as a float rounded to 32 bits."""
    if isinstance(key_type, BasicTypeInfo):
        if key_type.basic_type is BasicType.DOUBLE:
            return _as_double
        if key_type.basic_type is BasicType.FLOAT:
            return _as_float32
    return None


def _row_form(key_type: TypeInformation) -> Callable[[Any], Any] | None:
    """How PyFlink's serializer of a ``ROW`` key type hands back a fitting key: a ``Row``
    named as the type (a tuple becomes one; fields are converted as ``conform`` does)."""
    if not isinstance(key_type, RowTypeInfo):
        return None
    conform = key_type.conform
    cls = row_class(tuple(key_type.get_field_names()))
    if cls is None or any(t.needs_conform() for t in key_type.field_types):
        return conform
    arity = key_type.get_arity()

    def as_row(key: Any) -> Any:
        if type(key) is cls:  # a Row of the type's names already
            return key
        if type(key) is tuple and len(key) == arity:
            return tuple.__new__(cls, key)
        return conform(key)

    return as_row


#: Most ``Row`` keys a keyed selector keeps to hand out again (then it starts afresh).
INTERNED_ROWS = 1 << 16


def _rows_interned(key_type: TypeInformation) -> bool:
    """Whether the ``Row`` keys of ``key_type`` may be shared, one per fitting tuple: a
    ``ROW`` kept as its fields whose fields are all of basic types with plain values (str,
    bytes, int, bool; no float: ``0.0 == -0.0`` are two keys), so equal fitting tuples are
    the same key."""
    if not (isinstance(key_type, RowTypeInfo) and _row_keeps_fields(key_type)):
        return False
    for field_type in key_type.field_types:
        if not isinstance(field_type, BasicTypeInfo):
            return False
        exact = field_type.exact_types()
        if field_type.int_range() is None and not (exact and exact <= PLAIN_KEY_TYPES):
            return False
    return True


def _interning(
    selector: Callable[[Any], Any],
    key_type: TypeInformation,
    fits: Callable[[Any], bool],
    form: Callable[[Any], Any],
) -> Callable[[Any], Any]:
    """The keyed operator's selector of a ``ROW`` key type whose rows may be shared
    (:func:`_rows_interned`): one ``Row`` per fitting tuple, kept (up to
    :data:`INTERNED_ROWS`), so a key's records carry the same object and the state's dict finds
    it by identity instead of calling ``Row.__eq__`` (2.3 us a record of a keyed reduce
    before, against 0.42 for the tuple). Rows are immutable values; a user who sets a key's
    kind or field names would change the key of its later records, as no program does."""
    rows: dict[Any, Any] = {}

    @functools.wraps(selector)  # a failure names the user's selector
    def checked_interned(value: Any) -> Any:
        key = selector(value)
        if fits(key):  # an exact tuple of the fields' exact types: equal ones are one key
            row = rows.get(key)
            if row is None:
                if len(rows) >= INTERNED_ROWS:
                    rows.clear()
                row = rows[key] = form(key)
            return row
        return form(_checked_fully(key_type, key, value))

    return checked_interned


def _row_keeps_fields(key_type: TypeInformation) -> bool:
    """Whether ``key_type`` is a ``ROW`` whose ``Row`` of a fitting tuple is that tuple's
    fields under the type's names (:func:`_row_form`'s cheap path), so of its key group."""
    return (
        isinstance(key_type, RowTypeInfo)
        and row_class(tuple(key_type.get_field_names())) is not None
        and not any(t.needs_conform() for t in key_type.field_types)
    )


def _checked_fully(key_type: TypeInformation, key: Any, record: Any) -> Any:
    problem = key_type.check(key)
    if problem is None:
        return key
    raise _refusal(key_type, key, record, problem)


def _refusal(key_type: TypeInformation, key: Any, record: Any, problem: str) -> KeyTypeError:
    err = KeyTypeError(
        f"key_by() declared key_type {key_type!r}, but the key selector returned {key!r:.200} "
        f"({type(key).__name__}): {problem}"
    )
    note_record(err, record)
    return err
