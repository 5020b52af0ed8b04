"""What the DataStream conformance tests share: environments like PyFlink's test cases, and a
sink that stands in for PyFlink's ``DataStreamTestSinkFunction``.

``env`` is PyFlink's ``PyFlinkStreamingTestCase`` environment (parallelism 2, STREAMING) and
``batch_env`` its ``PyFlinkBatchTestCase`` one (BATCH); both run on the ``local-threads``
target, the cheapest real deployment (workers are threads of the test process). Import the
fixtures into a test module to use them.

``TestSink`` collects what reaches it; ``results()`` gives what PyFlink's sink gives for a
typed stream (Java's ``toString`` of the record: ``(a,1)``, ``+I[a, 1]``, ``true``, ``null``)
and ``results(python_objects=True)`` what it gives for a stream of Python objects
(``str(record)``). The sink keeps records in this module, so it works only where workers are
threads of this process.
"""

from __future__ import annotations

import datetime
import math
import threading
import uuid
from decimal import Decimal
from typing import Any

import pytest

from undertow.common import Configuration, Row
from undertow.datastream import RuntimeExecutionMode, SinkFunction, StreamExecutionEnvironment

_RECORDS: dict[str, list[Any]] = {}
_LOCK = threading.Lock()


def _environment(mode: RuntimeExecutionMode) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local-threads"})
    )
    env.set_parallelism(2)
    env.set_runtime_mode(mode)
    return env


@pytest.fixture
def env() -> StreamExecutionEnvironment:
    return _environment(RuntimeExecutionMode.STREAMING)


@pytest.fixture
def batch_env() -> StreamExecutionEnvironment:
    return _environment(RuntimeExecutionMode.BATCH)


class TestSink(SinkFunction):
    """Collects every record it receives (see the module docstring)."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self) -> None:
        self.sink_id = uuid.uuid4().hex
        _RECORDS[self.sink_id] = []

    def invoke(self, value: Any, context: Any) -> None:
        with _LOCK:
            _RECORDS[self.sink_id].append(value)

    def records(self) -> list[Any]:
        with _LOCK:
            return list(_RECORDS[self.sink_id])

    def results(self, python_objects: bool = False) -> list[str]:
        if python_objects:
            return [str(value) for value in self.records()]
        return [java_string(value) for value in self.records()]


def _java_double(x: float) -> str:
    """Java's ``Double.toString`` for the values these tests produce."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == int(x) and abs(x) < 1e7:
        return f"{int(x)}.0"
    if 1e-3 <= abs(x) < 1e7:
        return repr(x)
    _, digits, exponent = Decimal(repr(abs(x))).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    sign = "-" if x < 0 else ""
    return f"{sign}{text[0]}.{text[1:] or '0'}E{len(digits) + exponent - 1}"


def java_string(value: Any) -> str:
    """Java's ``toString`` of a record as Flink's Java side holds it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, Row):
        kind = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
        fields = ", ".join(java_string(v) for v in value)
        return f"{kind[value.get_row_kind().name]}[{fields}]"
    if isinstance(value, tuple):
        return "(" + ",".join(java_string(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(java_string(v) for v in value) + "]"
    if isinstance(value, datetime.datetime):
        millis = f"{value.microsecond // 1000:03d}".rstrip("0") or "0"
        return value.strftime("%Y-%m-%d %H:%M:%S") + "." + millis
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, datetime.time):
        return value.strftime("%H:%M:%S")
    return str(value)
