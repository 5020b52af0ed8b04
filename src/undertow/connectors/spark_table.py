"""A bounded source over a Spark table or DataFrame, planned in the driver, read by the
subtasks (issue 6, "Sources")::

    df = spark.read.parquet("/data/events")          # or spark.table("events")
    source = SparkTableSource.for_dataframe(df)      # or SparkTableSource.for_table("events")
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "events")

Planning asks Spark only for metadata: the DataFrame's optimized logical plan and its input
files (``df.inputFiles()``). No row goes through the driver: the result is a bounded
:class:`~undertow.connectors.file.source.FileSource` over those Parquet files, whose splits
(one per file) the enumerator hands to the subtasks, which read them with pyarrow, with
positions in the checkpoints like any file source. ``for_dataframe_batches`` and
``for_table_batches`` give a batch stream's source (``.as_batches()``).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from typing import Any

from undertow.common.typeinfo import RowTypeInfo, TypeInformation, Types
from undertow.connectors.file.formats import DEFAULT_BATCH_SIZE
from undertow.connectors.file.parquet import ParquetBatchInputFormat, ParquetColumnarRowInputFormat
from undertow.connectors.file.source import FileSource
from undertow.core.errors import UndertowError

_SIMPLE_TYPES = {
    "StringType": Types.STRING,
    "IntegerType": Types.INT,
    "LongType": Types.LONG,
    "ShortType": Types.SHORT,
    "ByteType": Types.BYTE,
    "DoubleType": Types.DOUBLE,
    "FloatType": Types.FLOAT,
    "BooleanType": Types.BOOLEAN,
    "DateType": Types.SQL_DATE,
}

_WRITE_FIRST = (
    "write it to Parquet first (df.write.parquet(path)) and read "
    "SparkTableSource.for_dataframe(spark.read.parquet(path))"
)


class SparkSourcePlanningError(UndertowError, ValueError):
    """A DataFrame or table cannot be read as a bounded source; says why and what to do."""


def row_type_of(spark_schema: Any) -> RowTypeInfo | None:
    """The row type for a Spark ``StructType`` of simple columns, or ``None`` (then rows carry
    every column of the files as Parquet gives them)."""
    names: list[str] = []
    types: list[TypeInformation] = []
    for f in spark_schema.fields:
        make = _SIMPLE_TYPES.get(type(f.dataType).__name__)
        if make is None:
            return None
        names.append(f.name)
        types.append(make())
    return Types.ROW_NAMED(names, types)


def plan_files(df: Any, what: str) -> list[str]:
    """The Parquet files behind a DataFrame that is a plain scan; raises otherwise."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        raise SparkSourcePlanningError(
            f"{what}: not a DataFrame of a classic Spark session (Spark Connect DataFrames "
            "expose no plan here); read the data with a classic session"
        )
    plan = jdf.queryExecution().optimizedPlan()
    node = plan.getClass().getSimpleName()
    if node != "LogicalRelation":
        raise SparkSourcePlanningError(
            f"{what}: the DataFrame is not a plain file scan (its plan is a {node}: filters, "
            f"projections, joins or computed rows cannot be read file by file); {_WRITE_FIRST}"
        )
    relation = plan.relation()
    kind = relation.getClass().getSimpleName()
    if kind != "HadoopFsRelation" or relation.fileFormat().toString() != "Parquet":
        fmt = relation.fileFormat().toString() if kind == "HadoopFsRelation" else kind
        raise SparkSourcePlanningError(f"{what}: reads {fmt}, not Parquet; {_WRITE_FIRST}")
    if relation.partitionSchema().length() > 0:
        columns = list(relation.partitionSchema().fieldNames())
        raise SparkSourcePlanningError(
            f"{what}: partitioned by {columns}, whose values are in directory names, not in "
            f"the files; {_WRITE_FIRST}"
        )
    files = sorted(str(f) for f in df.inputFiles())
    if not files:
        raise SparkSourcePlanningError(f"{what}: has no input files")
    return files


def _file_source(df: Any, what: str, batch_size: int) -> FileSource:
    files = plan_files(df, what)
    fmt = ParquetColumnarRowInputFormat(row_type_of(df.schema), batch_size=batch_size)
    return FileSource(fmt, tuple(files), None, batch_size)


def _batch_source(df: Any, what: str, batch_rows: int) -> FileSource:
    # every column as Parquet gives it: a plain scan's columns are the files' columns
    files = plan_files(df, what)
    return FileSource(
        ParquetBatchInputFormat(None, batch_rows), tuple(files), None, DEFAULT_BATCH_SIZE
    )


def _table(name: str, spark: Any, what: str) -> Any:
    """``spark.table(name)``, ``spark`` defaulting to the active session."""
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            raise SparkSourcePlanningError(f"{what}: no active Spark session; pass spark=")
    return spark.table(name)


class SparkTableSource:
    """Factories of bounded file sources over Spark data (see the module docstring): records
    (rows) or, for a batch stream, ``pyarrow.RecordBatch`` es (``..._batches``)."""

    @staticmethod
    def for_dataframe(df: Any, batch_size: int = DEFAULT_BATCH_SIZE) -> FileSource:
        return _file_source(df, "SparkTableSource.for_dataframe()", batch_size)

    @staticmethod
    def for_table(name: str, spark: Any = None, batch_size: int = DEFAULT_BATCH_SIZE) -> FileSource:
        """The table (or view) ``name`` of ``spark``'s catalog (default: the active session)."""
        what = f"SparkTableSource.for_table({name!r})"
        return _file_source(_table(name, spark, what), what, batch_size)

    @staticmethod
    def for_dataframe_batches(df: Any, batch_rows: int = 65536) -> FileSource:
        """Each record a ``pyarrow.RecordBatch`` of up to ``batch_rows`` rows with every column
        of the files: use ``env.from_source(...).as_batches()`` (docs/columnar.md)."""
        return _batch_source(df, "SparkTableSource.for_dataframe_batches()", batch_rows)

    @staticmethod
    def for_table_batches(name: str, spark: Any = None, batch_rows: int = 65536) -> FileSource:
        """:meth:`for_dataframe_batches` of the table (or view) ``name`` of ``spark``'s
        catalog (default: the active session)."""
        what = f"SparkTableSource.for_table_batches({name!r})"
        return _batch_source(_table(name, spark, what), what, batch_rows)
