"""undertow: Flink-style stream processing for Python, with Flink's checkpointing, on Spark.

The public API lives in :mod:`undertow.datastream` and :mod:`undertow.common` (PyFlink's module
layout, so a PyFlink job ports by changing its imports); :mod:`undertow.testing` is the testing kit.
"""

__version__ = "0.1.0"
