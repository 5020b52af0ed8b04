"""BATCH word count over a text file read with FileSource (the script writes the file first)."""

import os
import tempfile

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

POEM = """the quick brown fox
jumps over the lazy dog
the dog sleeps
"""


def main():
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, "poem.txt")
    with open(path, "w") as f:
        f.write(POEM)

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)

    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), path).build()
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "poem")
    lines.flat_map(
        lambda line: [(w, 1) for w in line.split()],
        output_type=Types.TUPLE([Types.STRING(), Types.INT()]),
    ).key_by(lambda p: p[0]).sum(1).print()
    env.execute("file word count")


if __name__ == "__main__":
    main()
