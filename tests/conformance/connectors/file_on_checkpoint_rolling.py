"""STREAMING with checkpoints: a bounded number sequence through a FileSink that rolls on every
checkpoint; every number is in some committed part file exactly once, none is in progress."""

import os
import tempfile

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink, RollingPolicy
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

output_dir = tempfile.mkdtemp()
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.enable_checkpointing(100)

env.from_source(NumberSequenceSource(1, 500), WatermarkStrategy.no_watermarks(), "numbers").map(
    lambda n: str(n), output_type=Types.STRING()
).sink_to(
    FileSink.for_row_format(output_dir, Encoder.simple_string_encoder())
    .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
    .build()
)
env.execute("numbers to files")

numbers, hidden = [], []
for root, _, files in os.walk(output_dir):
    for name in files:
        if name.startswith("."):
            hidden.append(name)
            continue
        with open(os.path.join(root, name)) as f:
            numbers.extend(int(line) for line in f)
print("numbers:", len(numbers), "distinct:", len(set(numbers)), "sum:", sum(numbers))
print("in-progress files:", len(hidden))
