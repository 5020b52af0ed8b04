"""Word count: the demo job (``make demo``).

Counts words of a small text with a keyed rolling sum at parallelism 2, prints every update
as PyFlink would, then a summary line. Run it with ``python examples/wordcount.py`` or
``undertow run examples/wordcount.py --target local-threads``.
"""

from __future__ import annotations

import time

from undertow.common import Types
from undertow.datastream import StreamExecutionEnvironment

TEXT = [
    "To be, or not to be, that is the question:",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune,",
    "Or to take arms against a sea of troubles",
    "And by opposing end them.",
]


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    counts = (
        env.from_collection(TEXT, type_info=Types.STRING())
        .flat_map(lambda line: [w.strip(",.:'").lower() for w in line.split()])
        .filter(lambda word: word != "")
        .map(lambda word: (word, 1))
        .key_by(lambda pair: pair[0])
        .sum(1)
    )
    counts.print()
    start = time.perf_counter()
    result = env.execute("wordcount")
    elapsed = time.perf_counter() - start
    words = sum(len([w for w in line.split() if w.strip(",.:'")]) for line in TEXT)
    print(f"wordcount: {words} words counted in {elapsed:.2f} s (job {result.get_job_id()[:8]})")


if __name__ == "__main__":
    main()
