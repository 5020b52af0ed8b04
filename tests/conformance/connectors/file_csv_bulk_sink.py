"""Rows to CSV files with CsvBulkWriters (FileSink.for_bulk_format), as PyFlink's docs write it."""

import os
import tempfile

from pyflink.common import Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink
from pyflink.datastream.formats.csv import CsvBulkWriters, CsvSchema
from pyflink.table import DataTypes

output_dir = tempfile.mkdtemp()
schema = (
    CsvSchema.builder()
    .add_number_column("id", number_type=DataTypes.INT())
    .add_string_column("name")
    .set_column_separator("|")
    .build()
)

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(2)
env.from_collection(
    [(1, "ann"), (2, "bob"), (3, "cid")],
    type_info=Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()]),
).sink_to(FileSink.for_bulk_format(output_dir, CsvBulkWriters.for_schema(schema)).build())
env.execute("csv out")

for root, _, files in os.walk(output_dir):
    for name in files:
        with open(os.path.join(root, name)) as f:
            print(f.read(), end="")
