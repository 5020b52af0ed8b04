"""A declared ``output_type`` (``map(f, output_type=...)``) checked where PyFlink checks it:
PyFlink encodes what a Python function returns with its declared type's serializer where the
records leave the chain of Python functions: to the network (``key_by``, another parallelism)
or to an operator it runs in Java (``print``, every sink), and to every consumer of a fanned
out function (PyFlink chains one only to its one consumer); a chained Python function gets
the value as it is (``map(f, Types.STRING()).map(g)`` runs with ``f`` returning ints). The
serializer fails on a value of another type (an ``int`` under ``STRING``). The chain wraps
those targets of an operator with an :class:`OutputCheck` in a :class:`CheckedOutput`, whose
:class:`~undertow.core.errors.OutputTypeError` names the operator, subtask, value, its type
and the declared type; a ``ROW``'s values go on as rows of its names, as PyFlink decodes them
(passed, unlike PyFlink: a tuple under ``ROW``; refused: a long tuple under ``TUPLE``).

Cost: none without an ``output_type`` (no wrapper). With one, per batch a few passes in C
(types, ``min``/``max`` of ints, a row type's lengths, columns); a batch that fails them is
checked value by value (microseconds each); positional rows are renamed, once per target."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from undertow.common.row import Row, RowKind, _create_row, row_class
from undertow.common.typeinfo import (
    BasicType,
    BasicTypeInfo,
    PickledBytesTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from undertow.common.typeinfo_basic import to_float32, type_to_check
from undertow.core.errors import OutputTypeError, shown_value
from undertow.runtime.task.operator import Output, Timestamps

_NONE = type(None)


@dataclass(frozen=True)
class OutputCheck:
    """The type ``what`` (``"map()"``) declared for its operator's output."""

    type_info: TypeInformation
    what: str

    @staticmethod
    def of(output_type: Any, what: str) -> OutputCheck | None:
        """None without an ``output_type`` or with ``PICKLED_BYTE_ARRAY`` (any value fits);
        one that is no type information is refused naming ``what``."""
        type_info = type_to_check(output_type, f"{what}: output_type")
        return None if type_info is None else OutputCheck(type_info, what)


def declared(operator: Any, output_type: Any, what: str) -> Any:
    """``operator`` with the check of ``output_type`` (see :class:`OutputCheck.of`)."""
    check = OutputCheck.of(output_type, what)
    if check is not None:
        operator.output_check = check
    return operator


def none_in_tuple(field_type: TypeInformation) -> bool:
    """Whether PyFlink's tuple coder writes ``None`` in a field of ``field_type``: it has no
    null mask (``TupleCoderImpl`` hands each field to its type's coder), and only the coders
    of ``PICKLED_BYTE_ARRAY`` (a pickle) and ``INSTANT`` (a null marker) take ``None``.
    The others fail on it: ``STRING``'s ``None.encode``, the integers' ``write_int64(None)``,
    the date and time types' attribute reads, and ``BIG_DEC``'s, which writes the text
    ``None`` that Java's ``BigDecimal`` then refuses (PyFlink 2.3 fails the job with
    ``NumberFormatException: Character N is neither a decimal digit number, ...``)."""
    if isinstance(field_type, PickledBytesTypeInfo):
        return True
    return isinstance(field_type, BasicTypeInfo) and field_type.basic_type is BasicType.INSTANT


def none_field_problem(type_info: TypeInformation, value: Any) -> str | None:
    """The ``None`` field of a tuple type in ``value`` (a value that passed ``check``, also
    inside a row or tuple field) that PyFlink's tuple coder cannot write
    (:func:`none_in_tuple`), described; None if there is none."""
    if not isinstance(type_info, (TupleTypeInfo, RowTypeInfo)) or not isinstance(value, tuple):
        return None
    tuple_type = isinstance(type_info, TupleTypeInfo)
    for index, (field_type, item) in enumerate(zip(type_info.field_types, value)):
        if item is None:
            if tuple_type and not none_in_tuple(field_type):
                return f"field {index}: expected {field_type!r}, got None (a tuple has no nulls)"
        else:
            problem = none_field_problem(field_type, item)
            if problem is not None:
                return f"field {index}: {problem}"
    return None


def batch_fits(type_info: TypeInformation, allow_none: bool) -> Callable[[Sequence[Any]], bool]:
    """A test true only of batches whose every value fits ``type_info`` (``None`` too if
    ``allow_none``), cheap on them; false of others, which the full check then decides."""
    if isinstance(type_info, BasicTypeInfo):
        bounds = type_info.int_range()
        if bounds is not None:
            low, high = bounds
            ints, with_none = {int}, {int, _NONE} if allow_none else {int}

            def in_range(values: Sequence[Any]) -> bool:
                types = set(map(type, values))  # a bool fails it: the full check takes it
                if types == ints:
                    numbers = values
                elif types == with_none:
                    numbers = [v for v in values if v is not None]
                else:
                    return not types
                return low <= min(numbers) and max(numbers) <= high

            return in_range
        exact = type_info.exact_types()
        if allow_none:
            exact = exact | {_NONE}
        return lambda values: set(map(type, values)) <= exact
    if isinstance(type_info, (RowTypeInfo, TupleTypeInfo)):
        in_row = isinstance(type_info, RowTypeInfo)  # a row's fields may all be None
        fields = [batch_fits(t, in_row or none_in_tuple(t)) for t in type_info.field_types]
        arity = frozenset({len(fields)})

        def rows_fit(values: Sequence[Any]) -> bool:
            if not all(issubclass(t, tuple) for t in set(map(type, values))):  # Row, tuple
                return False
            if not set(map(len, values)) <= arity:
                return False
            return all(fit(column) for fit, column in zip(fields, zip(*values)))

        return rows_fit
    return lambda values: False


def rows_named(type_info: TypeInformation) -> Callable[[list[Any]], list[Any]] | None:
    """For a ``ROW`` type, what PyFlink's row serializer makes of a batch of fitting values:
    each a ``Row`` with the type's field names (``Row("a", 1)`` under ``ROW_NAMED(["word",
    "n"], ...)`` is read as ``row.word`` after it); None for other types. Cheap when every
    value is a row of those names already (one pass in C); else a new list."""
    if not isinstance(type_info, RowTypeInfo):
        return None
    conform = type_info.conform
    cls = row_class(tuple(type_info.get_field_names()))
    if cls is None or any(t.needs_conform() for t in type_info.field_types):
        return lambda values: [conform(v) for v in values]
    named, arity, insert, new = (
        frozenset({cls}),
        type_info.get_arity(),
        RowKind.INSERT,
        tuple.__new__,
    )

    def one(v: Any) -> Any:
        t = type(v)
        if t is cls:
            return v
        if (t is tuple or (t is Row and v._row_kind is insert)) and len(v) == arity:
            return new(cls, v)  # what conform() builds, without its checks
        return conform(v)

    def as_named(values: list[Any]) -> list[Any]:
        if set(map(type, values)) <= named:
            return values
        return list(map(one, values))

    return as_named


def as_delivered(type_info: TypeInformation) -> Callable[[list[Any]], list[Any]] | None:
    """What PyFlink's serializer of ``type_info`` makes of a batch of fitting values, where
    it encodes them: rows as :func:`rows_named`; a ``FLOAT`` (alone, in a tuple, list or
    map) rounded to the nearest 32-bit float, as Java's ``float`` holds it (``0.1`` reaches
    the next function as ``0.10000000149011612``); a whole number or a bool under ``DOUBLE``
    (alone, a tuple's or a row's field) a ``float`` (``2`` reaches it as ``2.0``). None when
    the values go on as they are: every other type without a ``FLOAT`` or ``DOUBLE`` in it,
    decided once per target (a bool under an integer type: :func:`bools_as_ints`). A
    ``FLOAT`` batch or column is rounded in C (``array("f")``); a ``DOUBLE`` one of floats
    only is one pass in C (its types) and goes on unchanged."""
    named = rows_named(type_info)
    if named is not None:
        assert isinstance(type_info, RowTypeInfo)
        doubles = [i for i, t in enumerate(type_info.field_types) if t == _DOUBLE]
        if not doubles:
            return named
        return _rows_with_doubles(named, doubles, type_info.get_field_names())
    if isinstance(type_info, TupleTypeInfo):
        columns = [_column_as_delivered(t) for t in type_info.field_types]
        if not any(columns):
            return None

        def tuples(values: list[Any]) -> list[Any]:
            old = list(zip(*values))
            new = [c if f is None else f(c) for f, c in zip(columns, old)]
            if all(n is c for n, c in zip(new, old)):
                return values  # floats under every DOUBLE, no FLOAT
            return list(zip(*new))

        return tuples
    return _column_as_delivered(type_info)


def bools_as_ints(type_info: TypeInformation) -> Callable[[list[Any]], list[Any]] | None:
    """For an integer type, what PyFlink's coder makes of a bool: an ``int`` (``True`` as
    ``1``); None for other types (in a tuple or row an integer field's bool stays a bool,
    which equals and hashes as the int). Called only on a batch that failed the cheap test
    (a bool fails it), so batches of ints pay nothing."""
    if isinstance(type_info, BasicTypeInfo) and type_info.int_range() is not None:
        return _ints
    return None


def _column_as_delivered(type_info: TypeInformation) -> Callable[[Any], Any] | None:
    """Values of ``type_info`` (a batch, or one field of a batch of tuples) as delivered."""
    if type_info == _FLOAT:
        return _floats32
    if type_info == _DOUBLE:
        return _doubles
    if not type_info.needs_conform():
        return None
    conform = type_info.conform
    return lambda values: [conform(v) for v in values]


_FLOAT = BasicTypeInfo(BasicType.FLOAT)
_DOUBLE = BasicTypeInfo(BasicType.DOUBLE)
_FLOATS = frozenset({float, _NONE})


def _ints(values: list[Any]) -> list[Any]:
    """``values`` itself unless it holds a bool (one pass in C); else bools as ints."""
    if bool not in set(map(type, values)):
        return values
    return [int(v) if type(v) is bool else v for v in values]


def _floats32(values: Any) -> list[Any]:
    try:
        return array("f", values).tolist()
    except TypeError:  # a value array() does not take (a FLOAT passes only real numbers)
        return [to_float32(v) for v in values]


def _doubles(values: Any) -> Any:
    """``values`` itself when all are floats (or None, a row's field); else floats."""
    if set(map(type, values)) <= _FLOATS:
        return values
    return [v if v is None else float(v) for v in values]


def _rows_with_doubles(
    named: Callable[[list[Any]], list[Any]], doubles: list[int], names: list[str]
) -> Callable[[list[Any]], list[Any]]:
    """:func:`rows_named`'s ``named``, then whole numbers in the ``doubles`` fields as floats
    (a row rebuilt keeps its names and kind; rows of floats only go on as they are). A field
    is read by its name's C descriptor where the rows' class has one (``row.v``: 15 ns), else
    from the batch's columns (``zip``; a row's ``__getitem__`` is a Python call)."""
    cls = row_class(tuple(names))
    readers = [
        attrgetter(names[i]) if cls is not None and names[i] in vars(cls) else None for i in doubles
    ]

    def one(row: Any) -> Any:
        values = list(row)
        for i in doubles:
            if values[i] is not None:
                values[i] = float(values[i])
        return _create_row(row._fields, values, row.get_row_kind())

    def rows(values: list[Any]) -> list[Any]:
        values = named(values)
        columns: list[Any] | None = None
        for i, read in zip(doubles, readers):
            if read is None:
                columns = columns or list(zip(*values))
                column: Any = columns[i] if columns else ()
            else:
                column = map(read, values)
            if not set(map(type, column)) <= _FLOATS:
                return list(map(one, values))
        return values

    return rows


class CheckedOutput:
    """An operator's output target whose records are checked against the declared type
    first; built by the operator chain on the task's loop thread, which alone calls it."""

    __slots__ = ("_bools", "_check", "_fits", "_named", "_target", "_where")

    def __init__(self, target: Output, check: OutputCheck, where: str) -> None:
        self._target = target
        self._check = check
        self._fits = batch_fits(check.type_info, check.type_info.nullable)
        self._named = as_delivered(check.type_info)
        self._bools = bools_as_ints(check.type_info)
        self._where = where  # "operator 'Map' (subtask 1/2)"

    def collect_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        if not self._fits(values):
            self._refuse_misfits(values)
            if self._bools is not None:
                values = self._bools(values)
        if self._named is not None:
            values = self._named(values)
        self._target.collect_batch(values, timestamps)

    def _refuse_misfits(self, values: list[Any]) -> None:
        type_info = self._check.type_info
        for value in values:
            problem = type_info.check(value)
            if problem is None:
                problem = none_field_problem(type_info, value)
            if problem is not None:
                raise OutputTypeError(
                    f"{self._where}: {self._check.what} declared output_type {type_info!r}, "
                    f"but the function returned {shown_value(value)} ({type(value).__name__})"
                    f": {problem}"
                )

    def emit_watermark(self, watermark: int) -> None:
        self._target.emit_watermark(watermark)

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None) -> None:
        self._target.collect_side(tag_id, value, timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        self._target.emit_watermark_status(idle)
