"""Typed identifiers shared by every layer.

They are ``NewType`` aliases of ``int``/``str``: free at run time, distinct for mypy.
"""

from __future__ import annotations

from typing import NewType

JobId = NewType("JobId", str)
VertexId = NewType("VertexId", int)
SubtaskIndex = NewType("SubtaskIndex", int)
ChannelIndex = NewType("ChannelIndex", int)
CheckpointId = NewType("CheckpointId", int)
AttemptNumber = NewType("AttemptNumber", int)
WorkerIndex = NewType("WorkerIndex", int)
KeyGroup = NewType("KeyGroup", int)

#: Timestamp meaning "no timestamp" on a record, and the initial watermark.
MIN_TIMESTAMP = -(2**63)
#: The watermark that ends event time (sent when a bounded input is exhausted).
MAX_WATERMARK = 2**63 - 1
