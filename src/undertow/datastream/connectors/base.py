"""PyFlink's ``pyflink.datastream.connectors.base``: ``DeliveryGuarantee``.

undertow's sinks (``FileSink``, ``DeltaSink``) are two-phase-commit sinks: with checkpointing
on they are always :attr:`DeliveryGuarantee.EXACTLY_ONCE`, and no builder takes a guarantee
(Flink's ``FileSink`` takes none either). The enum is here so that code naming it ports.
"""

from __future__ import annotations

import enum


class DeliveryGuarantee(enum.Enum):
    """What a sink promises about each record after failures.

    * ``EXACTLY_ONCE``: visible once, also after a restore (undertow's file and Delta sinks:
      output becomes visible at the commit of the checkpoint that covers it).
    * ``AT_LEAST_ONCE``: may be visible more than once after a restore, never lost.
    * ``NONE``: best effort: records may be lost or duplicated.
    """

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2


__all__ = ["DeliveryGuarantee"]
