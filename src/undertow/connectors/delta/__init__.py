"""Delta Lake sink (exactly once, one table commit per checkpoint); see :mod:`.sink`."""

from undertow.connectors.delta.committable import DeltaCommittable, DeltaSinkError
from undertow.connectors.delta.committer import DeltaGlobalCommitter
from undertow.connectors.delta.sink import DeltaSink, DeltaSinkBuilder

__all__ = [
    "DeltaCommittable",
    "DeltaGlobalCommitter",
    "DeltaSink",
    "DeltaSinkBuilder",
    "DeltaSinkError",
]
