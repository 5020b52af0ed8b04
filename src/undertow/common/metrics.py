"""User metrics: PyFlink's ``MetricGroup`` with counters, gauges, meters and distributions.

``runtime_context.get_metrics_group()`` returns the operator's group; ``add_group(name)`` (or
``add_group(key, value)``) nests one, and metric identifiers join the names with ``.``, as
Flink's scopes do (``my_group.my_counter``). The worker samples every group with its task
metrics (:meth:`MetricGroup.metric_values`) and the REST API serves them under Flink's
``/jobs/:jobid/vertices/:vertexid/metrics``, as ``<subtask>.<operator>.<identifier>``.

Threading: metrics are updated by the task's thread and read by the worker's sampler; every
update is a single attribute write, so a reader sees a recent value, never a torn one.
Registering the same identifier twice returns the existing metric (a counter stays a counter;
another kind is refused with ``ValueError`` naming it).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["Counter", "Distribution", "Meter", "MetricGroup"]


class Counter:
    __slots__ = ("_count",)

    def __init__(self) -> None:
        self._count = 0

    def inc(self, n: int = 1) -> None:
        self._count += n

    def dec(self, n: int = 1) -> None:
        self._count -= n

    def get_count(self) -> int:
        return self._count


class Meter:
    """Events per second over the last ``time_span_in_seconds`` (at least one sample apart)."""

    __slots__ = ("_clock", "_count", "_samples", "_span")

    def __init__(self, time_span_in_seconds: int = 60,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        if time_span_in_seconds <= 0:
            raise ValueError(f"meter time span must be > 0 s, got {time_span_in_seconds!r}")
        self._span = float(time_span_in_seconds)
        self._clock = clock
        self._count = 0
        self._samples: deque[tuple[float, int]] = deque([(clock(), 0)])

    def mark_event(self, value: int = 1) -> None:
        self._count += value

    def get_count(self) -> int:
        return self._count

    def get_rate(self) -> float:
        """Rate over the span, from the oldest kept sample to now; records a sample."""
        now, count = self._clock(), self._count
        samples = self._samples
        while len(samples) > 1 and now - samples[1][0] >= self._span:
            samples.popleft()
        start_time, start_count = samples[0]
        samples.append((now, count))
        elapsed = now - start_time
        return (count - start_count) / elapsed if elapsed > 0 else 0.0


class Distribution:
    __slots__ = ("_count", "_max", "_min", "_sum")

    def __init__(self) -> None:
        self._count = 0
        self._sum = 0
        self._min: float | None = None
        self._max: float | None = None

    def update(self, value: int) -> None:
        self._count += 1
        self._sum += value
        self._min = value if self._min is None else min(self._min, value)
        self._max = value if self._max is None else max(self._max, value)

    def values(self) -> dict[str, float]:
        mean = self._sum / self._count if self._count else 0.0
        return {"count": self._count, "sum": self._sum, "min": self._min or 0,
                "max": self._max or 0, "mean": mean}  # fmt: skip


class _Gauge:
    __slots__ = ("function",)

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function


class MetricGroup:
    """A scope of metrics (PyFlink's ``MetricGroup``). Groups made by ``add_group`` share
    their root's registry."""

    def __init__(self, scope: tuple[str, ...] = (),
                 registry: dict[str, Any] | None = None) -> None:  # fmt: skip
        self._scope = scope
        self._registry: dict[str, Any] = {} if registry is None else registry

    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        """A nested group ``name``, or the key/value group ``name.extra``."""
        for part in (name, extra):
            if part is not None and (not part or "." in part):
                raise ValueError(f"metric group name must be non-empty without '.', got {part!r}")
        scope = (*self._scope, name) if extra is None else (*self._scope, name, extra)
        return MetricGroup(scope, self._registry)

    def counter(self, name: str) -> Counter:
        return self._register(name, Counter, Counter)

    def gauge(self, name: str, obj: Callable[[], Any]) -> None:
        if not callable(obj):
            raise TypeError(f"gauge {self._id(name)!r}: expected a callable, got {obj!r}")
        self._register(name, _Gauge, lambda: _Gauge(obj)).function = obj

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        return self._register(name, Meter, lambda: Meter(time_span_in_seconds))

    def distribution(self, name: str) -> Distribution:
        return self._register(name, Distribution, Distribution)

    def _id(self, name: str) -> str:
        if not name or "." in name:
            raise ValueError(f"metric name must be non-empty without '.', got {name!r}")
        return ".".join((*self._scope, name))

    def _register(self, name: str, kind: type, make: Callable[[], Any]) -> Any:
        identifier = self._id(name)
        metric = self._registry.get(identifier)
        if metric is None:
            metric = self._registry[identifier] = make()
        elif not isinstance(metric, kind):
            raise ValueError(
                f"metric {identifier!r} is already a {type(metric).__name__.lstrip('_')}, "
                f"cannot register it as a {kind.__name__.lstrip('_')}"
            )
        return metric

    def metric_values(self) -> dict[str, float]:
        """Every metric of the registry by identifier (see the module docstring). A gauge
        that raises or returns a non-number is left out (its error is not the job's)."""
        out: dict[str, float] = {}
        for identifier, metric in list(self._registry.items()):
            if isinstance(metric, Counter):
                out[identifier] = metric.get_count()
            elif isinstance(metric, Meter):
                out[identifier] = metric.get_rate()
                out[f"{identifier}_count"] = metric.get_count()
            elif isinstance(metric, Distribution):
                out.update({f"{identifier}_{k}": v for k, v in metric.values().items()})
            else:
                try:
                    value = metric.function()
                except Exception:
                    continue
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    out[identifier] = value
        return out
