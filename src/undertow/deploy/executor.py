"""Runs a job graph on the configured ``execution.target``.

The only place that knows about targets: everything below it runs the same code whatever the
target (STYLE.md principle 10).
"""

from __future__ import annotations

from undertow.core.config import Configuration, Options
from undertow.core.errors import ConfigurationError
from undertow.deploy.local import ProcessLauncher, ThreadLauncher
from undertow.graph.job_graph import JobGraph
from undertow.runtime.cluster.job_master import JobMaster, WorkerLauncher, default_num_workers


def start_job(job_graph: JobGraph, config: Configuration) -> JobMaster:
    target = config.get(Options.TARGET)
    launcher: WorkerLauncher
    if target == "local-threads":
        launcher = ThreadLauncher()
    elif target == "local":
        launcher = ProcessLauncher()
    else:
        raise ConfigurationError(
            f"execution.target '{target}' is not available yet; use 'local' or 'local-threads'"
        )
    slots = max(v.parallelism for v in job_graph.vertices)
    master = JobMaster(job_graph, config, launcher, default_num_workers(config, slots))
    master.start()
    return master
