"""Rows to Parquet with ParquetBulkWriters (FileSink.for_bulk_format) and back with
ParquetColumnarRowInputFormat (FileSource.for_bulk_file_format), as PyFlink's docs write it."""

import tempfile

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink, FileSource
from pyflink.datastream.formats.parquet import ParquetBulkWriters, ParquetColumnarRowInputFormat
from pyflink.table import DataTypes

output_dir = tempfile.mkdtemp()
row_type = DataTypes.ROW(
    [
        DataTypes.FIELD("name", DataTypes.STRING()),
        DataTypes.FIELD("score", DataTypes.INT()),
    ]
)
row_type_info = Types.ROW_NAMED(["name", "score"], [Types.STRING(), Types.INT()])

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
env.from_collection([("ann", 3), ("bob", 5)], type_info=row_type_info).sink_to(
    FileSink.for_bulk_format(output_dir, ParquetBulkWriters.for_row_type(row_type)).build()
)
env.execute("write parquet")

source = FileSource.for_bulk_file_format(
    ParquetColumnarRowInputFormat(
        row_type=row_type,
        batch_size=2048,
        is_utc_timestamp=False,
        is_case_sensitive=True,
    ),
    output_dir,
).build()
env.from_source(source, WatermarkStrategy.no_watermarks(), "parquet-source").map(
    lambda row: f"{row[0]} scored {row[1]}", output_type=Types.STRING()
).print()
env.execute("read parquet")
