"""A job for ``undertow run`` tests: a map that logs one warning, then a print sink."""

from __future__ import annotations

import logging
from typing import Any

from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.functions import MapFunction


class LoggingMap(MapFunction):
    def map(self, value: Any) -> Any:
        if value == 7:
            logging.getLogger("user.job").warning("hello from map, value %s", value)
        return value * 10


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(list(range(20))).rebalance().map(LoggingMap()).name("Logging").print()
    result = env.execute("logging job")
    print(f"JOB {result.get_job_id()}")


if __name__ == "__main__":
    main()
