"""A file source that keeps watching its directory (monitor_continuously): files added while the
job runs are read too. The job is stopped once it has seen them all."""

import os
import tempfile

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

watched = tempfile.mkdtemp()
with open(os.path.join(watched, "1.txt"), "w") as f:
    f.write("first\n")

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
source = (
    FileSource.for_record_stream_format(StreamFormat.text_line_format(), watched)
    .monitor_continuously(Duration.of_millis(100))
    .build()
)
lines = (
    env.from_source(source, WatermarkStrategy.no_watermarks(), "watched")
    .map(lambda line: "seen: " + line, output_type=Types.STRING())
    .execute_and_collect()
)
print(next(lines))
with open(os.path.join(watched, "2.txt"), "w") as f:
    f.write("second\nthird\n")
print(next(lines))
print(next(lines))
lines.close()
