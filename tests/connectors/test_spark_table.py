"""The Spark table source's planning parts that need no Spark
(:mod:`undertow.connectors.spark_table`): the row type of a schema of simple columns, and the
names PyFlink-style code imports."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from undertow.common.typeinfo import Types
from undertow.connectors.spark_table import SparkSourcePlanningError, SparkTableSource, row_type_of
from undertow.core.errors import UndertowError
from undertow.datastream.connectors import spark


def spark_type(name: str) -> Any:
    """An object whose class is named as Spark's data type ``name``."""
    return type(name, (), {})()


def schema(**columns: str) -> Any:
    fields = [SimpleNamespace(name=n, dataType=spark_type(t)) for n, t in columns.items()]
    return SimpleNamespace(fields=fields)


def test_simple_columns_give_a_named_row_type() -> None:
    got = row_type_of(schema(name="StringType", count="LongType", day="DateType"))
    assert got == Types.ROW_NAMED(["name", "count", "day"], [Types.STRING(), Types.LONG(),
                                                              Types.SQL_DATE()])  # fmt: skip


def test_a_column_of_another_type_leaves_rows_as_parquet_gives_them() -> None:
    assert row_type_of(schema(name="StringType", tags="ArrayType")) is None


def test_the_public_names_are_this_modules() -> None:
    assert spark.SparkTableSource is SparkTableSource
    assert issubclass(SparkSourcePlanningError, UndertowError)
    assert issubclass(SparkSourcePlanningError, ValueError)
