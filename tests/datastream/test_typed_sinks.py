"""``sink_to`` hands a sink the stream's declared type: ``Encoder.simple_string_encoder()``
in a row-format FileSink writes Java's ``toString`` of each record, as Flink's encoder does for
a PyFlink stream of that type (``+I[1, a]`` for a row, ``(1,a)`` for a tuple)."""

from __future__ import annotations

from pathlib import Path

from undertow.common import Configuration, Row, Types
from undertow.common.serialization import Encoder
from undertow.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from undertow.datastream.connectors.file_system import FileSink


def _written(tmp_path: Path, records: list[object], type_info: object) -> list[str]:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local-threads"})
    )
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)
    out = tmp_path / "out"
    sink = FileSink.for_row_format(str(out), Encoder.simple_string_encoder()).build()
    env.from_collection(records, type_info=type_info).sink_to(sink)
    env.execute("typed sink")
    return [
        line
        for f in sorted(out.rglob("*"))
        if f.is_file()
        for line in f.read_text().split("\n")
        if line
    ]


def test_a_declared_type_is_written_as_java_writes_it(tmp_path: Path) -> None:
    rows = _written(
        tmp_path / "r", [Row(1, "a"), Row(2, None)], Types.ROW([Types.INT(), Types.STRING()])
    )
    assert rows == ["+I[1, a]", "+I[2, null]"]
    pairs = [(1.5, True)]
    assert _written(tmp_path / "t", pairs, Types.TUPLE([Types.DOUBLE(), Types.BOOLEAN()])) == [
        "(1.5,true)"
    ]
    assert _written(tmp_path / "d", [1e20], Types.DOUBLE()) == ["1.0E20"]


def test_python_objects_and_strings_stay_as_they_are(tmp_path: Path) -> None:
    assert _written(tmp_path / "s", ["x y"], Types.STRING()) == ["x y"]
    assert _written(tmp_path / "o", [{"k": 1}], None) == ["{'k': 1}"]
