"""``undertow run``'s status of its running jobs: records/s, backpressure, last checkpoint and
restarts, read from each job's REST API.

On a terminal a live line drawn with rich (lines the job prints go above it); elsewhere a
plain line every ``PLAIN_EVERY_S`` seconds while it changes. :func:`sample` reads one job
over REST (Flink's JSON: ``/jobs/overview``, ``/jobs/:id``, the job's metrics and its
vertices' aggregated subtask metrics); :func:`status_line` renders a :class:`JobStatusSample`
(pure). Records/s is what the source tasks send downstream (their ``numRecordsOutPerSecond``:
0 for a job chained into one task, as in Flink's web UI);
backpressure is the highest ``backPressuredTimeMsPerSecond`` of any subtask, as a share.

Lifecycle and threading: :class:`StatusConsole` runs one daemon thread from ``start`` to
``stop``; it finds the process's endpoints with ``live_urls`` (jobs come and go while the
script runs) and only reads them. A job that cannot be read is left out of that tick.
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from dataclasses import dataclass
from typing import Any, TextIO

from undertow.core.units import human_bytes
from undertow.runtime.master.rest.server import live_urls

TICK_S = 0.5
PLAIN_EVERY_S = 5.0
_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class JobStatusSample:
    """One job's status at one moment."""

    job_id: str
    name: str
    state: str
    records_per_second: float
    #: Highest backpressured share of any subtask, 0..1.
    backpressure: float
    restarts: int
    #: -1 before the first completed checkpoint.
    last_checkpoint_id: int
    last_checkpoint_duration_ms: int
    last_checkpoint_size: int


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:
        return json.loads(response.read().decode("utf-8"))


def sample(base: str) -> list[JobStatusSample]:
    """The jobs of the REST API at ``base`` now (raises ``OSError``/``ValueError`` when it
    cannot be read)."""
    found = []
    for job in _get(f"{base}/jobs/overview")["jobs"]:
        jid = job["jid"]
        details = _get(f"{base}/jobs/{jid}")
        names = "numRestarts,lastCompletedCheckpointId,lastCheckpointDuration,lastCheckpointSize"
        metrics = {m["id"]: int(float(m["value"]))
                   for m in _get(f"{base}/jobs/{jid}/metrics?get={names}")}  # fmt: skip
        fed = {node["id"] for node in details["plan"]["nodes"] if node.get("inputs")}
        rate, pressure = 0.0, 0.0
        for vertex in details["vertices"]:
            query = "get=numRecordsOutPerSecond,backPressuredTimeMsPerSecond&agg=sum,max"
            values = {
                m["id"]: m
                for m in _get(f"{base}/jobs/{jid}/vertices/{vertex['id']}/subtasks/metrics?{query}")
            }
            if vertex["id"] not in fed and "numRecordsOutPerSecond" in values:
                rate += values["numRecordsOutPerSecond"]["sum"]
            if "backPressuredTimeMsPerSecond" in values:
                pressure = max(pressure, values["backPressuredTimeMsPerSecond"]["max"] / 1000)
        found.append(JobStatusSample(
            job_id=jid, name=job["name"], state=job["state"], records_per_second=rate,
            backpressure=pressure, restarts=metrics.get("numRestarts", 0),
            last_checkpoint_id=metrics.get("lastCompletedCheckpointId", -1),
            last_checkpoint_duration_ms=metrics.get("lastCheckpointDuration", -1),
            last_checkpoint_size=metrics.get("lastCheckpointSize", -1),
        ))  # fmt: skip
    return found


def status_line(job: JobStatusSample) -> str:
    """``job 1a2b3c4d "name" RUNNING | 1,234 records/s | backpressure 3% | checkpoint 17
    (45 ms, 12.0 KiB) | restarts 0``."""
    checkpoint = "no checkpoint yet"
    if job.last_checkpoint_id >= 0:
        checkpoint = (f"checkpoint {job.last_checkpoint_id} ({job.last_checkpoint_duration_ms} "
                      f"ms, {human_bytes(job.last_checkpoint_size)})")  # fmt: skip
    return (
        f'job {job.job_id[:8]} "{job.name}" {job.state} | '
        f"{job.records_per_second:,.0f} records/s | "
        f"backpressure {job.backpressure:.0%} | {checkpoint} | restarts {job.restarts}"
    )


class StatusConsole:
    """The status thread (see the module docstring). ``live``: draw with rich (a terminal)."""

    def __init__(self, out: TextIO | None = None, live: bool | None = None) -> None:
        self.out = sys.stderr if out is None else out
        self.live = self.out.isatty() if live is None else live
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._main, name="undertow-status", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)

    def _lines(self) -> list[str]:
        lines = []
        for url in live_urls():
            try:
                lines += [status_line(job) for job in sample(url)]
            except (OSError, ValueError, KeyError, TypeError):
                continue  # the job is ending, or its endpoint is not up yet
        return lines

    def _main(self) -> None:
        if self.live:
            self._draw_live()
        else:
            self._print_plain()

    def _print_plain(self) -> None:
        last: list[str] = []
        while not self._stopped.wait(PLAIN_EVERY_S):
            lines = self._lines()
            if lines and lines != last:
                for line in lines:
                    self.out.write(f"[undertow] {line}\n")
                self.out.flush()
                last = lines

    def _draw_live(self) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        console = Console(file=self.out)
        # what the job prints goes above the line; stdout only when it is a terminal too (a
        # redirected stdout must keep its output)
        with Live(Text(""), console=console, refresh_per_second=4, transient=True,
                  redirect_stdout=sys.stdout.isatty(), redirect_stderr=True) as live:  # fmt: skip
            while not self._stopped.wait(TICK_S):
                live.update(Text("\n".join(self._lines()), style="bold cyan"))
