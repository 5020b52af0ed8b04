"""The job's REST API: Flink's JSON for the endpoints monitoring tools use most.

Top of the layering (next to :mod:`undertow.cli`): it reads the JobMaster's
:class:`~undertow.runtime.master.metrics.JobView` and nothing else. :mod:`.rest` is the
server and its routes, :mod:`.responses` the response bodies.
"""

from undertow.runtime.master.rest.server import RestEndpoint, start_rest_endpoint

__all__ = ["RestEndpoint", "start_rest_endpoint"]
