"""``execute_and_collect`` hands records back as PyFlink 2.3 reads them back from Java
(``undertow.datastream.data_stream_sink.collected_form``); recorded by the corpus program
``collected_and_chained_types``."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.common import Row, RowKind, Types
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.data_stream_sink import collected_form


def test_records_of_types_without_a_float_or_bytes_come_back_as_they_are() -> None:
    pair = Types.TUPLE([Types.STRING(), Types.INT()])
    ints = Types.PRIMITIVE_ARRAY(Types.INT())
    for type_info in (Types.DOUBLE(), Types.STRING(), pair, Types.ROW([Types.INT()]), ints, None):
        assert collected_form(type_info) is None


def test_a_float_is_read_back_as_java_prints_it_and_bytes_as_javas_signed_bytes() -> None:
    floats = collected_form(Types.FLOAT())
    assert floats is not None and floats(0.10000000149011612) == 0.1 and floats(2.5) == 2.5
    signed = collected_form(Types.PRIMITIVE_ARRAY(Types.BYTE()))
    assert signed is not None and signed(bytes([1, 2, 255])) == [1, 2, -1]
    pairs = collected_form(Types.TUPLE([Types.STRING(), Types.FLOAT()]))
    assert pairs is not None and pairs(("a", 0.10000000149011612)) == ("a", 0.1)
    rows = collected_form(Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.FLOAT()]))
    deleted = Row.of_kind(RowKind.DELETE, k="a", v=0.10000000149011612)
    assert rows is not None
    back = rows(deleted)
    assert back.as_dict() == {"k": "a", "v": 0.1} and back.get_row_kind() is RowKind.DELETE
    assert rows(Row(k="b", v=None)).v is None


@pytest.mark.parametrize(
    ("value", "type_info", "collected"),
    [(0.1, Types.FLOAT(), 0.1), (bytes([1, 255]), Types.PRIMITIVE_ARRAY(Types.BYTE()), [1, -1]),
     (("a", 0.1), Types.TUPLE([Types.STRING(), Types.FLOAT()]), ("a", 0.1))],
)  # fmt: skip
def test_execute_and_collect_reads_back_what_pyflink_does(
    env: StreamExecutionEnvironment, value: Any, type_info: Any, collected: Any
) -> None:
    env.set_parallelism(1)
    stream = env.from_collection(["go"], type_info=Types.STRING())
    mapped = stream.map(lambda _: value, output_type=type_info)
    assert list(mapped.execute_and_collect()) == [collected]
    assert mapped.execute_and_collect(limit=1) == [collected]
