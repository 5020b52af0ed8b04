"""The job shapes of the checkpoint-latency benchmark, written once for PyFlink and undertow.

Nothing from either engine is imported at module import time: :func:`build` imports the
DataStream API of the engine it is asked for (``pyflink`` or ``undertow``) by name, so the very
same job code runs on both, which also shows that undertow's API is PyFlink's. Every shape ends
in ``filter(False).print()`` (PyFlink has no discarding sink in Python) and reads an effectively
unbounded ``NumberSequenceSource``; the runner cancels the job after its measuring window.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any

SHAPES = ("slow-map-chained", "anchor-sleep", "anchor-spin", "fan-out", "window")
DESCRIPTIONS = {
    "slow-map-chained": "source -> map sleeping 0.5 ms (chained) -> key_by -> reduce, p=2",
    "anchor-sleep": "source -> map -> key_by -> map sleeping 1 ms, p=1",
    "anchor-spin": "source -> map -> key_by -> map spinning 1 ms, p=1",
    "fan-out": "source -> flat_map x100 -> key_by -> map spinning 10 us, p=2",
    "window": "source -> key_by (10,000 keys) -> 1 s processing-time window -> reduce, p=2",
}
PARALLELISM = {"slow-map-chained": 2, "anchor-sleep": 1, "anchor-spin": 1, "fan-out": 2,
               "window": 2}  # fmt: skip
END = 10**12  # effectively unbounded


def spin(seconds: float) -> None:
    """Burn CPU (holding the GIL) for ``seconds``: a CPU-bound user function."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def _sleepy(seconds: float) -> Callable[[Any], Any]:
    def f(value: Any) -> Any:
        time.sleep(seconds)
        return value

    return f


def _spinning(seconds: float) -> Callable[[Any], Any]:
    def f(value: Any) -> Any:
        spin(seconds)
        return value

    return f


def _fan_out(value: Any) -> list[tuple[int, str]]:
    return [(value, f"{value}:{j}:".ljust(100, "y")) for j in range(100)]


def build(engine: str, shape: str, env: Any) -> None:
    """Add ``shape``'s operators to ``env`` (a StreamExecutionEnvironment of ``engine``)."""
    common = importlib.import_module(f"{engine}.common")
    windows = importlib.import_module(f"{engine}.datastream.window")
    number_seq = importlib.import_module(f"{engine}.datastream.connectors.number_seq")
    env.set_parallelism(PARALLELISM[shape])
    source = env.from_source(
        number_seq.NumberSequenceSource(0, END),
        common.WatermarkStrategy.no_watermarks(),
        "numbers",
    )
    if shape == "slow-map-chained":
        out = (source.map(_sleepy(0.0005))
               .key_by(lambda v: v % 1000)
               .reduce(lambda a, b: a + b))  # fmt: skip
    elif shape in ("anchor-sleep", "anchor-spin"):
        slow = _sleepy(0.001) if shape == "anchor-sleep" else _spinning(0.001)
        out = source.map(lambda v: v).key_by(lambda v: v % 128).map(slow)
    elif shape == "fan-out":
        out = (source.flat_map(_fan_out)
               .key_by(lambda v: v[1][-8:])
               .map(_spinning(0.00001)))  # fmt: skip
    elif shape == "window":
        out = (source.map(lambda v: (v % 10_000, 1))
               .key_by(lambda v: v[0])
               .window(windows.TumblingProcessingTimeWindows.of(common.Time.seconds(1)))
               .reduce(lambda a, b: (a[0], a[1] + b[1])))  # fmt: skip
    else:
        raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")
    out.filter(lambda v: False).print()
