"""The names FileSink gives its part files: '<prefix>-<uuid>-<counter><suffix>' in Flink's
FileWriterBucket, the uuid one per bucket writer, the counter from 0."""

import os
import re
import tempfile

from pyflink.common import Types
from pyflink.common.serialization import Encoder
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink, OutputFileConfig

output_dir = tempfile.mkdtemp()
env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
env.from_collection(["a", "b"], type_info=Types.STRING()).sink_to(
    FileSink.for_row_format(output_dir, Encoder.simple_string_encoder())
    .with_output_file_config(
        OutputFileConfig.builder().with_part_prefix("out").with_part_suffix(".log").build()
    )
    .build()
)
env.execute("names")

uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
for _, _, files in os.walk(output_dir):
    for name in files:
        print(uuid.sub("<uuid>", name))
