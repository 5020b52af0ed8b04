"""A job for ``undertow run`` tests: a map that logs one warning and prints one line, then a
print sink. Its records are of a class of the script itself (``__main__`` of the driver only),
which workers receive by value (issue 26)."""

from __future__ import annotations

import logging
from typing import Any

from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.functions import MapFunction


class Reading:
    def __init__(self, value: int) -> None:
        self.value = value


class LoggingMap(MapFunction):
    def map(self, reading: Any) -> Any:
        value = reading.value
        if value == 7:
            logging.getLogger("user.job").warning("hello from map, value %s", value)
            print(f"print from map, value {value}")
        return value * 10


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    readings = env.from_collection([Reading(v) for v in range(20)])
    readings.rebalance().map(LoggingMap()).name("Logging").print()
    result = env.execute("logging job")
    print(f"JOB {result.get_job_id()}")


if __name__ == "__main__":
    main()
