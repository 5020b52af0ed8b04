"""Typed records straight into a row-format FileSink with the simple string encoder: the file
holds what Java's toString gives for each record of the declared type."""

import os
import tempfile

from pyflink.common import Types
from pyflink.common.serialization import Encoder
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink

output_dir = tempfile.mkdtemp()
env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
people = env.from_collection(
    [(1, "ann", 1.5), (2, None, 1e20)],
    type_info=Types.ROW_NAMED(
        ["id", "name", "score"], [Types.INT(), Types.STRING(), Types.DOUBLE()]
    ),
)
people.sink_to(FileSink.for_row_format(output_dir, Encoder.simple_string_encoder()).build())
env.execute("rows to text")

for root, _, files in os.walk(output_dir):
    for name in files:
        with open(os.path.join(root, name)) as f:
            print(f.read(), end="")
