"""``DataTypes`` (PyFlink's ``pyflink.table``): the Table API types PyFlink's DataStream formats
take, as the ``TypeInformation`` undertow's formats take, so programs that build a CSV schema
or a Parquet row type with them port by their imports."""

from __future__ import annotations

import pytest

from undertow.common import Row, Types
from undertow.datastream.formats.csv import CsvReaderFormat, CsvSchema
from undertow.datastream.formats.parquet import ParquetBulkWriters, ParquetColumnarRowInputFormat
from undertow.table import DataTypes
from undertow.table.types import DataTypeField


def test_each_sql_type_is_the_type_of_its_python_values() -> None:
    assert [DataTypes.TINYINT(), DataTypes.SMALLINT(), DataTypes.INT(), DataTypes.BIGINT()] == [
        Types.BYTE(), Types.SHORT(), Types.INT(), Types.LONG()
    ]  # fmt: skip
    assert DataTypes.STRING() == DataTypes.VARCHAR(10) == DataTypes.CHAR(3) == Types.STRING()
    assert DataTypes.BYTES() == DataTypes.VARBINARY(8) == Types.PRIMITIVE_ARRAY(Types.BYTE())
    assert DataTypes.DECIMAL(38, 18) == Types.BIG_DEC()
    assert DataTypes.DOUBLE(nullable=False) == Types.DOUBLE()
    assert DataTypes.TIMESTAMP(3) == Types.SQL_TIMESTAMP()
    assert DataTypes.ARRAY(DataTypes.INT()) == Types.BASIC_ARRAY(Types.INT())
    assert DataTypes.MAP(DataTypes.STRING(), DataTypes.BIGINT()) == Types.MAP(
        Types.STRING(), Types.LONG()
    )


def test_a_row_of_fields_is_a_named_row() -> None:
    row = DataTypes.ROW([
        DataTypes.FIELD("id", DataTypes.INT()),
        DataTypes.FIELD("name", DataTypes.STRING(), "who"),
    ])  # fmt: skip
    assert row == Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    assert DataTypes.FIELD("id", DataTypes.INT()) == DataTypeField("id", Types.INT())
    with pytest.raises(TypeError, match=r"DataTypes.ROW: expected DataTypes.FIELD\(...\)s"):
        DataTypes.ROW([DataTypes.INT()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"DataTypes.FIELD\('id'\): expected a data type"):
        DataTypes.FIELD("id", int)  # type: ignore[arg-type]


def test_pyflinks_format_examples_take_them() -> None:
    schema = (
        CsvSchema.builder()
        .add_number_column("id", number_type=DataTypes.INT())
        .add_string_column("name")
        .set_column_separator("|")
        .build()
    )
    assert CsvReaderFormat.for_schema(schema).parse("7|ann") == Row(id=7, name="ann")
    row_type = DataTypes.ROW([DataTypes.FIELD("a", DataTypes.INT())])
    assert ParquetColumnarRowInputFormat(row_type=row_type).row_type == row_type
    assert ParquetBulkWriters.for_row_type(row_type) is not None
