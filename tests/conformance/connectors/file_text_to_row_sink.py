"""Text files in, upper-cased lines out through a row-format FileSink with an OutputFileConfig
and a default rolling policy; prints the lines of the finished part files."""

import os
import tempfile

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)

work = tempfile.mkdtemp()
input_dir = os.path.join(work, "in")
output_dir = os.path.join(work, "out")
os.makedirs(input_dir)
with open(os.path.join(input_dir, "a.txt"), "w") as f:
    f.write("to be\nor not\n")
with open(os.path.join(input_dir, "b.txt"), "w") as f:
    f.write("to be\n")

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)

source = (
    FileSource.for_record_stream_format(StreamFormat.text_line_format(), input_dir)
    .process_static_file_set()
    .build()
)
sink = (
    FileSink.for_row_format(output_dir, Encoder.simple_string_encoder("UTF-8"))
    .with_output_file_config(
        OutputFileConfig.builder().with_part_prefix("words").with_part_suffix(".txt").build()
    )
    .with_rolling_policy(
        RollingPolicy.default_rolling_policy(
            part_size=1024**3, rollover_interval=15 * 60 * 1000, inactivity_interval=5 * 60 * 1000
        )
    )
    .build()
)
env.from_source(source, WatermarkStrategy.no_watermarks(), "lines").map(
    lambda line: line.upper(), output_type=Types.STRING()
).sink_to(sink)
env.execute("upper")

for root, _, files in os.walk(output_dir):
    for name in files:
        print(
            "finished:",
            not name.startswith("."),
            "named:",
            name.startswith("words-") and name.endswith(".txt"),
        )
        with open(os.path.join(root, name)) as f:
            for line in f:
                print("line:", line.rstrip("\n"))
