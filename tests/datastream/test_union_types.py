"""``union`` refuses streams of two different declared types when the job is declared, naming
both operators and types (:mod:`undertow.datastream.union_types`), as Flink does."""

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
    with pytest.raises(GraphBuildError, match=refused):
        numbers.union(numbers.map(lambda n: n), words)  # an untyped stream between them


def test_equal_types_and_python_objects_union(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    row = Types.ROW_NAMED(["id", "vc"], [Types.STRING(), Types.INT()])
    a = env.from_collection([Row(id="a", vc=1)], type_info=row)
    b = env.from_collection(
        [Row(id="b", vc=2)], type_info=Types.ROW_NAMED(["id", "vc"], [Types.STRING(), Types.INT()])
    )
    objects = env.from_collection([Row(id="c", vc=3)])
    pickled = env.from_collection([Row(id="d", vc=4)], type_info=Types.PICKLED_BYTE_ARRAY())
    union = a.union(b, objects, pickled.key_by(lambda r: r.id))
    assert union.get_type() == row
    with union.execute_and_collect() as out:
        assert sorted(r.vc for r in out) == [1, 2, 3, 4]


class _Named:
    def __init__(self, name: str, type_info: object) -> None:
        self._name, self._type = name, type_info

    def get_type(self) -> object:
        return self._type

    def get_name(self) -> str:
        return self._name


def test_the_first_declared_type_is_what_the_others_are_held_to() -> None:
    untyped, longs = _Named("u", None), _Named("l", Types.LONG())
    check_union_types(untyped, [longs, _Named("p", Types.PICKLED_BYTE_ARRAY()), longs])
    with pytest.raises(GraphBuildError, match="operator 'l' has Long, operator 'd' has Double"):
        check_union_types(untyped, [longs, _Named("d", Types.DOUBLE())])
