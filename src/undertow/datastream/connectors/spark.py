"""``undertow.datastream.connectors.spark``: a bounded source over a Spark table or DataFrame.

Re-exports only; the implementation is :mod:`undertow.connectors.spark_table`.
"""

from undertow.connectors.spark_table import SparkSourcePlanningError, SparkTableSource

__all__ = ["SparkSourcePlanningError", "SparkTableSource"]
