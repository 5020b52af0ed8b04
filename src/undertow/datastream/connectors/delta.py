"""``undertow.datastream.connectors.delta``: the Delta Lake sink (Flink's Delta connector).

Re-exports only; the implementation is :mod:`undertow.connectors.delta`.
"""

from undertow.connectors.delta import DeltaSink, DeltaSinkBuilder, DeltaSinkError

__all__ = ["DeltaSink", "DeltaSinkBuilder", "DeltaSinkError"]
