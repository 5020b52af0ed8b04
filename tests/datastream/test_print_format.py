"""``print()`` writes what PyFlink 2.3 writes. The expected lines were recorded by running the
same pipelines on PyFlink 2.3.0 (parallelism 1, one sink identifier per case)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from undertow.common import Instant, Row, RowKind, Types, WatermarkStrategy
from undertow.common.watermark_strategy import TimestampAssigner
from undertow.datastream import AllWindowFunction, KeyedProcessFunction, StreamExecutionEnvironment
from undertow.runtime.task.print_format import formatter, java_double, java_instant


class Shown:
    def __repr__(self) -> str:
        return "Shown-repr"

    def __str__(self) -> str:
        return "Shown-str"


UNTYPED = [1, "s", 1.5, (1, "a"), ("x", (2, 3)), [1, 2], {"k": 1}, True, Row(1, "a"),
           Row(name="n", v=2), Shown(), 1e20, 0.1]  # fmt: skip

# (identifier, records, type) -> the lines PyFlink 2.3 printed, in order
CASES: list[tuple[str, list[Any], Any, list[str]]] = [
    ("nothing", UNTYPED, None, [
        "1", "s", "1.5", "(1, 'a')", "('x', (2, 3))", "[1, 2]", "{'k': 1}", "True",
        "<Row(1, 'a')>", "Row(name='n', v=2)", "Shown-str", "1e+20", "0.1",
    ]),
    ("row", [Row(1, "a"), Row(2, None)], Types.ROW([Types.INT(), Types.STRING()]),
     ["+I[1,a]", "+I[2,None]"]),
    ("rownamed", [Row(name="n", v=2)],
     Types.ROW_NAMED(["name", "v"], [Types.STRING(), Types.INT()]), ["+I[n,2]"]),
    ("tuple", [(1, "a"), (2, None)], Types.TUPLE([Types.INT(), Types.STRING()]),
     ["(1,a)", "(2,null)"]),
    ("string", ["s", "t u"], Types.STRING(), ["s", "t u"]),
    ("int", [1, -2], Types.INT(), ["1", "-2"]),
    ("long", [1, 2**40], Types.LONG(), ["1", "1099511627776"]),
    ("bool", [True, False], Types.BOOLEAN(), ["true", "false"]),
    ("double", [1.5, 1e20, 0.1, 2.0, 1e-5], Types.DOUBLE(),
     ["1.5", "1.0E20", "0.1", "2.0", "1.0E-5"]),
    ("float", [1.5, 0.1], Types.FLOAT(), ["1.5", "0.1"]),
    ("map", [{"j": 2, "k": 1}], Types.MAP(Types.STRING(), Types.INT()), ["{j=2, k=1}"]),
    ("rowtuple", [Row(1, (2, "b"))],
     Types.ROW([Types.INT(), Types.TUPLE([Types.INT(), Types.STRING()])]), ["+I[1,(2, 'b')]"]),
    ("bigdec", [Decimal("1.50")], Types.BIG_DEC(), ["1.50"]),
    # corpus basic_types_print_sink; in a ROW an instant prints as its str, Instant<s, ns>
    ("instant", [Instant.of_epoch_milli(1709296205123)], Types.INSTANT(),
     ["2024-03-01T12:30:05.123Z"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("identifier", "records", "type_info", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_print_renders_records_as_pyflink(
    env: StreamExecutionEnvironment,
    capsys: pytest.CaptureFixture[str],
    identifier: str,
    records: list[Any],
    type_info: Any,
    expected: list[str],
) -> None:
    env.set_parallelism(1)
    env.from_collection(records, type_info=type_info).print(identifier)
    env.execute("print")
    assert capsys.readouterr().out.splitlines() == [f"{identifier}> {line}" for line in expected]


def test_print_of_mapped_streams_follows_the_declared_output_type(
    env: StreamExecutionEnvironment, capsys: pytest.CaptureFixture[str]
) -> None:
    env.set_parallelism(1)
    numbers = env.from_collection([1, 2])
    row_type = Types.ROW([Types.INT(), Types.STRING()])
    numbers.map(lambda x: Row(x, str(x)), output_type=row_type).print("maprow")
    numbers.map(lambda x: Row(x, str(x))).print("maprow-notype")
    tuple_type = Types.TUPLE([Types.INT(), Types.STRING()])
    numbers.map(lambda x: (x, str(x)), output_type=tuple_type).rebalance().print("maptuple")
    numbers.map(lambda x: (x, str(x))).print("maptuple-notype")
    numbers.map(lambda x: x * 1.5, output_type=Types.DOUBLE()).print("mapdouble")
    numbers.map(lambda x: [x, 2], output_type=Types.LIST(Types.INT())).print("maplist")
    env.execute("print")
    assert sorted(capsys.readouterr().out.splitlines()) == sorted([
        "maprow> +I[1,1]", "maprow> +I[2,2]",
        "maprow-notype> <Row(1, '1')>", "maprow-notype> <Row(2, '2')>",
        "maptuple> (1,1)", "maptuple> (2,2)",
        "maptuple-notype> (1, '1')", "maptuple-notype> (2, '2')",
        "mapdouble> 1.5", "mapdouble> 3.0",
        "maplist> [1, 2]", "maplist> [2, 2]",
    ])  # fmt: skip


def test_parallel_print_prefixes_subtask_and_identifier(
    env: StreamExecutionEnvironment, capsys: pytest.CaptureFixture[str]
) -> None:
    env.set_parallelism(2)
    env.from_collection([1, 2, 3, 4]).rebalance().print()
    env.from_collection(["a", "b"]).rebalance().print("tag")
    env.execute("print")
    lines = capsys.readouterr().out.splitlines()
    untagged = sorted(line for line in lines if not line.startswith("tag"))
    assert sorted(line.split("> ")[1] for line in untagged) == ["1", "2", "3", "4"]
    assert {line.split("> ")[0] for line in untagged} <= {"1", "2"}
    tagged = [line for line in lines if line.startswith("tag")]
    assert sorted(line.split("> ")[1] for line in tagged) == ["a", "b"]
    assert {line.split("> ")[0] for line in tagged} <= {"tag:1", "tag:2"}


class ValueIsTime(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value)


class PrintAtTheEnd(KeyedProcessFunction):
    """Passes records on; ``print()``s (three writes) when its key's end-of-input timer fires."""

    def process_element(self, value: int, ctx: KeyedProcessFunction.Context) -> Any:
        ctx.timer_service().register_event_time_timer(10**9)
        yield value

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        print("timer", ctx.get_current_key())
        yield from ()


def test_print_in_a_function_comes_whole_and_after_what_the_subtask_printed_before(
    env: StreamExecutionEnvironment, capsys: pytest.CaptureFixture[str]
) -> None:
    """On ``local-threads`` too, as on PyFlink and on worker processes, a function's
    ``print()`` goes the print sink's way: a line a function prints comes after the sink lines
    of records its subtask emitted before, and is never cut by another worker's output. (A
    chain runs a batch of records through each function in turn, so within a batch the
    function's lines come first, as PyFlink's bundles do.)"""

    def announce(value: int) -> int:
        print("saw", value)
        return value

    env.set_parallelism(1)
    numbers = list(range(1000))
    env.from_collection(numbers, Types.INT()).map(announce, Types.INT()).print("map")
    timed = env.from_collection(numbers, Types.INT()).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ValueIsTime())
    )
    timed.key_by(lambda v: v % 3).process(PrintAtTheEnd(), Types.INT()).print("keyed")
    env.execute("print in functions")
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("saw")] == [f"saw {v}" for v in numbers]
    assert [line for line in lines if line.startswith("map> ")] == [f"map> {v}" for v in numbers]
    at = {line: i for i, line in enumerate(lines)}  # every line is printed once
    assert all(at[f"saw {v}"] < at[f"map> {v}"] for v in numbers)
    keyed = [line for line in lines if line.startswith(("keyed> ", "timer"))]
    assert sorted(keyed[:-3]) == sorted(f"keyed> {v}" for v in numbers), keyed[-10:]
    assert sorted(keyed[-3:]) == ["timer 0", "timer 1", "timer 2"], keyed[-10:]
    assert len(lines) == 3 * len(numbers) + 3, [line for line in lines if line[0] not in "skm"]


@pytest.mark.parametrize(
    ("value", "single", "text"),
    [(1.5, False, "1.5"), (1e20, False, "1.0E20"), (1e-5, False, "1.0E-5"), (2.0, False, "2.0"),
     (12345678.0, False, "1.2345678E7"), (0.001, False, "0.001"), (0.0001, False, "1.0E-4"),
     (-3.25, False, "-3.25"), (100.0, False, "100.0"), (float("nan"), False, "NaN"),
     (float("-inf"), False, "-Infinity"), (-0.0, False, "-0.0"), (0.1, True, "0.1"),
     (1 / 3, True, "0.33333334"), (1 / 3, False, "0.3333333333333333")],
)  # fmt: skip
def test_java_double_to_string(value: float, single: bool, text: str) -> None:
    assert java_double(value, single) == text


@pytest.mark.parametrize(
    ("instant", "text"),
    [(Instant(0), "1970-01-01T00:00:00Z"),
     (Instant(1709296205, 123_000_000), "2024-03-01T12:30:05.123Z"),
     (Instant(1, 120_000), "1970-01-01T00:00:01.000120Z"),
     (Instant(-1, 5), "1969-12-31T23:59:59.000000005Z"),
     (Instant(253402300800), "Instant<253402300800, 0>")],
)  # fmt: skip
def test_java_instant_to_string(instant: Instant, text: str) -> None:
    assert java_instant(instant) == text


@pytest.mark.parametrize(
    ("kind", "short"),
    [(RowKind.INSERT, "+I"), (RowKind.UPDATE_BEFORE, "-U"), (RowKind.UPDATE_AFTER, "+U"),
     (RowKind.DELETE, "-D")],
)  # fmt: skip
def test_a_row_prints_its_kind_and_a_row_typed_tuple_prints_as_an_insert(
    kind: RowKind, short: str
) -> None:
    """A Row's kind leads it (a row-typed stream's record, or a row inside a value Java
    prints); a tuple or list declared as a row has none: ``+I``."""
    row = Row(1, "a")
    row.set_row_kind(kind)
    row_type = Types.ROW([Types.INT(), Types.STRING()])
    assert formatter(row_type)(row) == f"{short}[1,a]"
    assert formatter(row_type)((1, "a")) == formatter(row_type)([1, "a"]) == "+I[1,a]"
    in_tuple = Types.TUPLE([Types.INT(), row_type])
    assert formatter(in_tuple)((2, row)) == f"(2,{short}[1, a])"
    assert formatter(in_tuple)((2, (1, "a"))) == "(2,+I[1, a])"


def test_a_window_reduce_without_a_window_function_keeps_the_input_type(
    env: StreamExecutionEnvironment, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyFlink's ``WindowedStream.reduce`` and ``AllWindowedStream.reduce`` declare the
    input's type when neither a window function nor an output type is given, so a window of
    tuples prints as Java's ``(a,3)``, as the keyed ``reduce`` does; with a window function
    the result is Python objects again. (Not recorded on PyFlink as the cases above: read
    from PyFlink 2.3's ``reduce``, which sets ``output_type = self.get_input_type()``.)"""
    env.set_parallelism(1)
    tuple_type = Types.TUPLE([Types.STRING(), Types.INT()])
    pairs = env.from_collection([("a", 1), ("a", 2), ("b", 5)], type_info=tuple_type)
    add = lambda x, y: (x[0], x[1] + y[1])  # noqa: E731
    keyed = pairs.key_by(lambda p: p[0]).count_window(2).reduce(add)
    assert keyed.get_type() == tuple_type
    keyed.print("window")
    every = pairs.count_window_all(3).reduce(add)
    assert every.get_type() == tuple_type
    every.print("all")
    pairs.count_window_all(3).reduce(add, _Pass()).print("function")
    env.execute("window reduce")
    assert sorted(capsys.readouterr().out.splitlines()) == [
        "all> (a,8)", "function> ('a', 8)", "window> (a,3)"
    ]  # fmt: skip


class _Pass(AllWindowFunction):
    def apply(self, window: Any, inputs: Any) -> Any:
        yield from inputs
