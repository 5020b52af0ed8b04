"""A function's declared ``output_type`` is checked where PyFlink's serializer checks it: before
the network and before a sink, not between chained functions
(:mod:`undertow.runtime.task.output_check`)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.datastream.environments import threads_env

from undertow.common import Row
from undertow.common.typeinfo import Types
from undertow.core.errors import JobExecutionError
from undertow.datastream import (
    CoMapFunction,
    KeyedProcessFunction,
    ProcessFunction,
    ProcessWindowFunction,
)


class Doubling(ProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value * 2


class KeyedDoubling(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value * 2


def _declared_string(stream: Any, how: str) -> Any:
    if how == "map":
        return stream.map(lambda n: n * 2, output_type=Types.STRING())
    if how == "flat_map":
        return stream.flat_map(lambda n: [n * 2], output_type=Types.STRING())
    if how == "process":
        return stream.process(Doubling(), output_type=Types.STRING())
    return stream.key_by(lambda n: n % 2).process(KeyedDoubling(), output_type=Types.STRING())


_OPERATORS = {"map": ("Map", "map"), "flat_map": ("FlatMap", "flat_map"),
              "process": ("Process", "process"),
              "keyed_process": ("KeyedProcess", "KeyedStream.process")}  # fmt: skip


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("how", ["map", "flat_map", "process", "keyed_process"])
@pytest.mark.parametrize("then", ["print", "collect", "key_by"])
def test_a_value_that_does_not_fit_the_declared_output_type_fails_the_job(
    parallelism: int, how: str, then: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An int under ``Types.STRING()`` fails (PyFlink: "'int' object has no attribute
    'encode'") before a print, a collect and a key_by, naming the operator, its subtask, the
    value, its type and the declared type."""
    env = threads_env(parallelism)
    declared = _declared_string(env.from_collection([1, 2, 3], type_info=Types.INT()), how)
    name, method = _OPERATORS[how]
    refused = (
        rf"job failed: operator '{name}' \(subtask [12]/{parallelism} of '[^']*'\) raised "
        rf"OutputTypeError: operator '{name}' \(subtask [12]/{parallelism}\): {method}\(\) "
        r"declared output_type String, but the function returned (\d) \(int\): expected "
        r"String, got int \1"
    )
    with pytest.raises(JobExecutionError, match=refused):
        if then == "print":
            declared.print()
            env.execute()
        elif then == "collect":
            list(declared.execute_and_collect())
        else:
            list(declared.key_by(lambda s: s).map(lambda s: s).execute_and_collect())


def test_a_tuple_of_another_arity_than_the_declared_tuple_fails() -> None:
    """Under ``Types.TUPLE([STRING, INT])`` a 3-tuple is refused (PyFlink's serializer would
    drop its third field silently, a short one fail) before a key_by."""
    env = threads_env(2)
    stream = env.from_collection([1, 2], type_info=Types.INT()).map(
        lambda n: (str(n), n, n), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
    )
    with pytest.raises(JobExecutionError, match=(
        r"map\(\) declared output_type TupleTypeInfo\(String, Integer\), but the function "
        r"returned \('\d', \d, \d\) \(tuple\): expected TupleTypeInfo\(String, Integer\) with 2 "
        r"fields, got 3 values"
    )):  # fmt: skip
        list(stream.key_by(lambda t: t[0]).map(lambda t: t).execute_and_collect())


def test_values_handed_to_a_chained_function_are_not_checked_as_in_pyflink() -> None:
    """PyFlink hands a chained Python function the value itself (no serializer between them):
    ``map(f, STRING).map(g, INT)`` runs with ``f`` returning ints; so does undertow."""
    env = threads_env(1)
    stream = (
        env.from_collection([1, 2, 3], type_info=Types.INT())
        .map(lambda n: n * 2, output_type=Types.STRING())
        .map(lambda n: n + 1, output_type=Types.INT())
    )
    assert list(stream.execute_and_collect()) == [3, 5, 7]


def test_fitting_values_pass(env: Any) -> None:
    row = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.LONG()])
    stream = (
        env.from_collection(["a", "b", "a"], type_info=Types.STRING())
        .map(lambda w: Row(word=w, n=1), output_type=row)
        .key_by(lambda r: r.word)
        .reduce(lambda a, b: Row(word=a.word, n=a.n + b.n))
    )
    assert sorted(tuple(r) for r in stream.execute_and_collect()) == [
        ("a", 1), ("a", 2), ("b", 1)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("declared", "delivered"),
    [(Types.LONG(), [1, 0]), (Types.INT(), [1, 0]), (Types.DOUBLE(), [1.0, 0.0])],
)
def test_bools_under_integer_and_floating_types_pass_as_pyflink_delivers_them(
    env: Any, declared: Any, delivered: list[Any]
) -> None:
    """PyFlink 2.3's coders write a bool under ``LONG`` or ``DOUBLE``: ``map(lambda x: x ==
    1, output_type=Types.LONG())`` over ``[1, 2]`` prints 1 and 0 there (and 1.0 and 0.0
    under ``DOUBLE``; run 2026-12-03). Until then undertow failed that job."""
    stream = env.from_collection([1, 2], type_info=Types.INT()).map(
        lambda x: x == 1, output_type=declared
    )
    got = sorted(stream.key_by(lambda v: 0).map(lambda v: v).execute_and_collect(), reverse=True)
    assert got == delivered and [type(v) for v in got] == [type(v) for v in delivered]


class _Tagged(CoMapFunction):
    def map1(self, value: Any) -> Any:
        return value

    def map2(self, value: Any) -> Any:
        return len(value)  # an int where the declared type is STRING


class _Count(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield key, len(list(elements))  # a tuple where the declared type is STRING


def test_two_input_and_window_functions_check_their_declared_output_type() -> None:
    """``ConnectedStreams.map`` and a window's ``process`` are Python functions in PyFlink
    too, their output written with the declared type's serializer."""
    env = threads_env(2)
    words = env.from_collection(["ab", "c"], type_info=Types.STRING())
    co = words.connect(words).map(_Tagged(), output_type=Types.STRING())
    with pytest.raises(JobExecutionError, match=(
        r"operator 'Co-Map' \(subtask [12]/2\): ConnectedStreams.map\(\) declared output_type "
        r"String, but the function returned [12] \(int\)"
    )):  # fmt: skip
        list(co.execute_and_collect())
    windowed = (
        words.key_by(lambda w: w).count_window(1).process(_Count(), output_type=Types.STRING())
    )
    with pytest.raises(JobExecutionError, match=(
        r"WindowedStream.process\(\) declared output_type String, but the function returned "
        r"\('(ab|c)', 1\) \(tuple\)"
    )):  # fmt: skip
        list(windowed.execute_and_collect())


def test_a_rolling_reduce_keeps_its_inputs_type_as_pyflink_writes_it() -> None:
    """PyFlink writes a ``KeyedStream.reduce``'s values with the input's type: a reduce of an
    ``INT`` stream returning None fails there ("an integer is required", PyFlink 2.3, run
    2026-12-03); fitting values and an untyped stream pass."""
    env = threads_env(1)
    numbers = env.from_collection([1, 2, 3, 4], type_info=Types.INT())
    reduced = numbers.key_by(lambda n: n % 2).reduce(lambda a, b: None)
    with pytest.raises(JobExecutionError, match=re.escape(
        "KeyedStream.reduce() (the input's type) declared output_type Integer, but the "
        "function returned None (NoneType)"
    )):  # fmt: skip
        list(reduced.execute_and_collect())
    summed = numbers.key_by(lambda n: n % 2).reduce(lambda a, b: a + b)
    assert sorted(summed.execute_and_collect()) == [1, 2, 4, 6]
    untyped = env.from_collection([1, 2, 3]).key_by(lambda n: 0).reduce(lambda a, b: str(b))
    assert list(untyped.execute_and_collect()) == [1, "2", "3"]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_rows_of_a_declared_named_row_type_arrive_named_after_a_key_by(parallelism: int) -> None:
    """``Row(w, 1)`` under ``ROW_NAMED(["word", "n"], ...)`` is read by name after a key_by:
    PyFlink's row serializer writes it and the next Python function gets it decoded as
    ``Row(word=..., n=...)`` (PyFlink 2.3 run for real); undertow handed the positional row
    on, so ``a.word`` failed."""
    env = threads_env(parallelism)
    row = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])
    counts = (
        env.from_collection(["a", "b", "a"], type_info=Types.STRING())
        .map(lambda w: Row(w, 1), output_type=row)
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: Row(word=a.word, n=a.n + b.n))
    )
    out = [r.as_dict() for r in counts.execute_and_collect()]
    assert sorted(out, key=str) == [{"word": "a", "n": 1}, {"word": "a", "n": 2},
                                    {"word": "b", "n": 1}]  # fmt: skip


def test_a_function_fanned_out_to_chained_functions_checks_its_output_as_pyflink() -> None:
    """PyFlink chains a Python function to its consumer only when that is its one consumer
    (``PythonOperatorChainingOptimizer.isChainable``: one output); fanned out to two, its
    values leave through the declared type's serializer, which refuses an int under
    ``STRING`` even though both consumers are chained functions here."""
    env = threads_env(1)
    declared = env.from_collection([1, 2], type_info=Types.INT()).map(
        lambda n: n * 2, output_type=Types.STRING()
    )
    both = declared.map(lambda s: s).union(declared.map(lambda s: s))
    with pytest.raises(JobExecutionError, match=(
        r"operator 'Map' \(subtask 1/1\): map\(\) declared output_type String, but the "
        r"function returned [24] \(int\)"
    )):  # fmt: skip
        list(both.execute_and_collect())


@pytest.mark.parametrize("other", ["chained map", "key_by", "print"])
def test_rows_fanned_out_to_a_chained_function_arrive_named(other: str) -> None:
    """Fanned out (to another chained function, a key_by or a sink besides), a function's
    ``Row(w, 1)`` under ``ROW_NAMED(["word", "n"], ...)`` reaches its chained consumer as
    PyFlink's serializer decodes it, a row read by name (it was the positional row)."""
    env = threads_env(1)
    row = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])
    rows = env.from_collection(["a", "b"], type_info=Types.STRING()).map(
        lambda w: Row(w, 1), output_type=row
    )
    words = rows.map(lambda r: r.word, output_type=Types.STRING())
    if other == "chained map":
        second = rows.map(lambda r: str(r.n), output_type=Types.STRING())
    elif other == "key_by":
        second = rows.key_by(lambda r: r[0]).map(lambda r: str(r.n), output_type=Types.STRING())
    else:
        second = env.from_collection(["1", "1"], type_info=Types.STRING())
        rows.print()
    assert sorted(words.union(second).execute_and_collect()) == ["1", "1", "a", "b"]


@pytest.mark.parametrize(
    ("field", "nested"),
    [(Types.STRING(), False), (Types.BIG_INT(), False), (Types.SQL_DATE(), False),
     (Types.STRING(), True)],
    ids=["string", "big_int", "sql_date", "string-in-row"],
)  # fmt: skip
def test_a_none_field_of_a_declared_tuple_fails_as_pyflinks_tuple_coder(
    field: Any, nested: bool
) -> None:
    """PyFlink's tuple coder writes no null mask (``TupleCoderImpl`` hands each field to its
    type's coder) and ``STRING``'s, the integers' and the date types' coders fail on
    ``None``; undertow let a ``None`` of its nullable types (``STRING``, ``BIG_INT``,
    ``SQL_DATE``) pass. In a ``ROW``, whose coder has a null mask, ``None`` passes, but not
    inside its tuple field."""
    env = threads_env(2)
    pair = Types.TUPLE([field, Types.INT()])
    declared, made = (Types.ROW([pair]), lambda n: Row((None, n))) if nested else (pair, None)
    stream = env.from_collection([1, 2], type_info=Types.INT()).map(
        made or (lambda n: (None, n)), output_type=declared
    )
    where = r"field 0: field 0" if nested else r"field 0"
    with pytest.raises(JobExecutionError, match=(
        rf"map\(\) declared output_type .*, but the function returned .*: {where}: expected "
        rf"{re.escape(repr(field))}, got None \(a tuple has no nulls\)"
    )):  # fmt: skip
        list(stream.key_by(lambda t: 0).map(lambda t: t).execute_and_collect())


def test_none_passes_in_the_tuple_fields_whose_pyflink_coder_takes_it() -> None:
    """``PICKLED_BYTE_ARRAY`` (a pickle) and ``INSTANT`` (a null marker) write ``None`` in a
    tuple; so does a ``ROW``'s null mask."""
    env = threads_env(2)
    declared = Types.TUPLE([Types.PICKLED_BYTE_ARRAY(), Types.INSTANT(),
                            Types.ROW([Types.STRING()])])  # fmt: skip
    stream = env.from_collection([1, 2], type_info=Types.INT()).map(
        lambda n: (None, None, Row(None)), output_type=declared
    )
    flat = stream.key_by(lambda t: 0).map(lambda t: (t[0], t[1], t[2][0]))
    out = list(flat.execute_and_collect())
    assert out == [(None, None, None), (None, None, None)]
