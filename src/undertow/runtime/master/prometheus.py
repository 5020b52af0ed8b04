"""A Prometheus endpoint for the job, as Flink's ``PrometheusReporter`` renders its metrics.

Off by default. ``metrics.reporter.prom.port`` (a port, or a range ``9250-9260``) switches it
on; so does Flink's ``metrics.reporter.prom.factory.class`` (then on port 9249). It listens on
``rest.bind-address`` beside the REST API, and only while the REST API runs.

Names and labels are Flink's: ``flink_jobmanager_job_<metric>`` (job scope),
``flink_taskmanager_job_task_<metric>`` per subtask and, for the user's metrics,
``flink_taskmanager_job_task_operator_<group>_<name>`` with ``operator_name``; all gauges, with
the REST API's values (:mod:`~undertow.runtime.master.rest.metrics_responses`).

Threading: prometheus-client serves scrapes on its own thread; each scrape asks the JobMaster's
loop for a fresh :class:`JobView` (``run_coroutine_threadsafe``) and renders it there, off the
loop. ``close`` stops the server (any thread).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from undertow.core.errors import ConfigurationError
from undertow.runtime.master.metrics import JobView
from undertow.runtime.master.rest import metrics_responses as mr
from undertow.runtime.master.settings import PROMETHEUS_PORT_KEY, RestSettings

log = logging.getLogger(__name__)

SCRAPE_TIMEOUT_S = 5.0
JOB_PREFIX = "flink_jobmanager_job_"
TASK_PREFIX = "flink_taskmanager_job_task_"
TASK_LABELS = ("job_id", "job_name", "task_id", "task_name", "subtask_index", "task_attempt_num")
#: User metrics (``get_metrics_group()``), named as Flink's reporter names operator-scope ones.
OPERATOR_PREFIX = "flink_taskmanager_job_task_operator_"
OPERATOR_LABELS = (*TASK_LABELS, "operator_name")
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def families(view: JobView) -> list[Metric]:
    """The job's metrics as Prometheus gauge families (pure)."""
    found: list[Metric] = []
    for name, value in mr.job_metrics(view).items():
        family = GaugeMetricFamily(
            JOB_PREFIX + name, f"{name} (Flink job scope)", labels=("job_id", "job_name")
        )
        family.add_metric((view.job_id, view.name), float(value))
        found.append(family)
    tasks: dict[str, GaugeMetricFamily] = {}
    for vertex in view.vertices:
        for index, sample in enumerate(vertex.metrics):
            labels = (view.job_id, view.name, vertex.rest_id, vertex.name, str(index),
                      str(view.num_restarts))  # fmt: skip
            for name, value in mr.subtask_metrics(sample).items():
                operator, dot, metric = name.partition(".")
                if dot:  # a user metric: "<operator>.<group...>.<name>"
                    full = OPERATOR_PREFIX + _INVALID.sub("_", metric)
                    gauge = tasks.get(full)
                    if gauge is None:
                        gauge = tasks[full] = GaugeMetricFamily(
                            full, f"{metric} (user metric, Flink operator scope)",
                            labels=OPERATOR_LABELS,
                        )  # fmt: skip
                    gauge.add_metric((*labels, operator), float(value))
                    continue
                gauge = tasks.get(name)
                if gauge is None:
                    gauge = tasks[name] = GaugeMetricFamily(
                        TASK_PREFIX + name, f"{name} (Flink task scope)", labels=TASK_LABELS
                    )
                gauge.add_metric(labels, float(value))
    return found + list(tasks.values())


class _JobCollector(Collector):
    def __init__(self, fetch: Callable[[], JobView]) -> None:
        self._fetch = fetch

    def collect(self) -> Iterable[Metric]:
        return iter(families(self._fetch()))

    def describe(self) -> Iterator[Metric]:
        return iter(())  # no view at registration: collected on scrape only


class PrometheusExporter:
    """The HTTP server of one job's metrics (see the module docstring)."""

    def __init__(self, server: WSGIServer, port: int) -> None:
        self._server = server
        self.port = port

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def start_exporter(
    settings: RestSettings, source: Callable[[], JobView]
) -> PrometheusExporter | None:
    """Start serving as configured (None when off). Call on the JobMaster's loop: scrapes ask
    that loop for views. Raises :class:`ConfigurationError` naming the key when no configured
    port is free."""
    ports = settings.prometheus_ports
    if ports is None:
        return None
    loop = asyncio.get_running_loop()

    async def fresh() -> JobView:
        return source()

    def fetch() -> JobView:
        return asyncio.run_coroutine_threadsafe(fresh(), loop).result(SCRAPE_TIMEOUT_S)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_JobCollector(fetch))
    host = settings.bind_address
    errors = []
    for port in ports:
        try:
            server, _ = start_http_server(port, host, registry)
        except OSError as err:
            errors.append(f"{port}: {err.strerror or err}")
            continue
        bound = int(server.server_address[1])
        log.info("Prometheus metrics at http://%s:%d/metrics", host, bound)
        return PrometheusExporter(server, bound)
    raise ConfigurationError(
        f"the Prometheus reporter cannot listen on {host} ({'; '.join(errors)}). Set "
        f"'{PROMETHEUS_PORT_KEY}' to a free port or range"
    )
