"""CSV files read with CsvReaderFormat (the PyFlink docs' schema shape), summed per city."""

import os
import tempfile

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSource
from pyflink.datastream.formats.csv import CsvReaderFormat, CsvSchema
from pyflink.table import DataTypes

path = os.path.join(tempfile.mkdtemp(), "people.csv")
with open(path, "w") as f:
    f.write("id|name|city\n1|ann|paris\n2|bob|rome\n3|cid|paris\n")

schema = (
    CsvSchema.builder()
    .add_number_column("id", number_type=DataTypes.INT())
    .add_string_column("name")
    .add_string_column("city")
    .set_column_separator("|")
    .set_use_header()
    .build()
)

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), path).build()
people = env.from_source(source, WatermarkStrategy.no_watermarks(), "csv-source")
people.print()
people.map(
    lambda row: (row.city, row.id), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
).key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print()
env.execute("csv")
