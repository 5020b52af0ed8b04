"""``RuntimeExecutionMode`` (PyFlink's ``pyflink.datastream.RuntimeExecutionMode``)."""

from __future__ import annotations

import enum


class RuntimeExecutionMode(enum.Enum):
    """STREAMING: continuous results. BATCH (bounded inputs only): final results only, keyed
    reductions emit one record per key and event time jumps to the end when input ends.
    AUTOMATIC: BATCH when every source is bounded, else STREAMING."""

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2
