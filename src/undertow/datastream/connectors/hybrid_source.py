"""PyFlink's ``pyflink.datastream.connectors.hybrid_source``: ``HybridSource``.

Re-exports only; the implementation is :mod:`undertow.connectors.hybrid`.
"""

from undertow.connectors.hybrid import HybridSource, HybridSourceBuilder

__all__ = ["HybridSource", "HybridSourceBuilder"]
