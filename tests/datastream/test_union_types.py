"""``union`` refuses streams of two different types (no type being ``PICKLED_BYTE_ARRAY``) when
the job is declared, naming both operators and types (:mod:`undertow.datastream.union_types`),
as Flink does."""

from __future__ import annotations

import pytest

from undertow.common import Row, Types
from undertow.core.errors import GraphBuildError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.union_types import check_union_types


def test_streams_of_different_declared_types_are_refused(env: StreamExecutionEnvironment) -> None:
    """Accepted before: the union took the first input's type (INT), so the strings printed
    and aggregated as integers would."""
    numbers = env.from_collection([1, 2], type_info=Types.INT()).name("numbers")
    words = env.from_collection(["x"], type_info=Types.STRING()).name("words")
    refused = (
        r"union\(\): cannot union streams of different types: operator 'numbers' has Integer, "
        r"operator 'words' has String"
    )
    with pytest.raises(GraphBuildError, match=refused):
        numbers.union(words)
    with pytest.raises(GraphBuildError, match="operator 'numbers' has Integer, operator 'Map'"):
        numbers.union(numbers.map(lambda n: n), words)  # an untyped stream: refused too


def test_equal_types_union_and_a_keyed_input_keeps_its_type(
    env: StreamExecutionEnvironment,
) -> None:
    """A keyed input enters through PyFlink's ``_keyed_stream_values_operator``, a map of the
    keyed stream's type (PyFlink's ``KeyedStream._values()``): it unions with its type, and a
    union that starts with it has that type (it had none before)."""
    env.set_parallelism(1)
    row = Types.ROW_NAMED(["id", "vc"], [Types.STRING(), Types.INT()])
    a = env.from_collection([Row(id="a", vc=1)], type_info=row)
    b = env.from_collection(
        [Row(id="b", vc=2)], type_info=Types.ROW_NAMED(["id", "vc"], [Types.STRING(), Types.INT()])
    )
    keyed = env.from_collection([Row(id="c", vc=3)], type_info=row).key_by(lambda r: r.id)
    union = a.union(b, keyed)
    assert union.get_type() == row and keyed.union(a).get_type() == row
    with union.execute_and_collect() as out:
        assert sorted(r.vc for r in out) == [1, 2, 3]


def test_python_objects_union_with_python_objects_only(env: StreamExecutionEnvironment) -> None:
    """PyFlink gives a stream without a type ``PICKLED_BYTE_ARRAY``, and Flink refuses a union
    of it with a typed stream (PyFlink 2.3 run for real: "Cannot union streams of different
    types: Integer and PickledByteArrayTypeInfo"); undertow accepted it, the union then
    printing and aggregating the objects as the first input's type."""
    env.set_parallelism(1)
    numbers = env.from_collection([1, 2], type_info=Types.INT()).name("numbers")
    objects = env.from_collection([3, 4]).name("objects")
    pickled = env.from_collection([5], type_info=Types.PICKLED_BYTE_ARRAY())
    for first, second, named in [
        (numbers, objects, "operator 'numbers' has Integer, operator 'objects' has no type"),
        (objects, numbers, "operator 'objects' has no type .*, operator 'numbers' has Integer"),
        (
            numbers,
            objects.key_by(lambda n: n),
            "operator 'numbers' has Integer, operator '_keyed_stream_values_op",
        ),
    ]:
        with pytest.raises(GraphBuildError, match=f"union\\(\\): cannot union streams of "
                           f"different types: {named}"):  # fmt: skip
            first.union(second)
    with objects.union(pickled, objects.key_by(lambda n: n)).execute_and_collect() as out:
        assert sorted(out) == [3, 3, 4, 4, 5]


class _Named:
    def __init__(self, name: str, type_info: object) -> None:
        self._name, self._type = name, type_info

    def get_type(self) -> object:
        return self._type

    def get_name(self) -> str:
        return self._name


def test_every_type_is_held_to_the_first_no_type_being_pickled_bytes() -> None:
    untyped, longs = _Named("u", None), _Named("l", Types.LONG())
    check_union_types(longs, [longs, _Named("l2", Types.LONG())])
    check_union_types(untyped, [_Named("p", Types.PICKLED_BYTE_ARRAY()), untyped])
    with pytest.raises(GraphBuildError, match="operator 'l' has Long, operator 'd' has Double"):
        check_union_types(longs, [longs, _Named("d", Types.DOUBLE())])
    with pytest.raises(GraphBuildError, match=r"operator 'u' has no type .*, operator 'l' has Lo"):
        check_union_types(untyped, [longs])
