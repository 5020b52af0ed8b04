"""PyFlink's ``pyflink.datastream.connectors.base``: ``DeliveryGuarantee``.

undertow's file and Delta sinks are two-phase-commit sinks: with checkpointing on they are
always :attr:`DeliveryGuarantee.EXACTLY_ONCE`, and their builders take no guarantee (Flink's
``FileSink`` takes none either); ``KafkaSink.builder().set_delivery_guarantee`` takes one. The
enum is defined with the sink contract (:mod:`undertow.connectors.sink`).
"""

from __future__ import annotations

from undertow.connectors.sink import DeliveryGuarantee

__all__ = ["DeliveryGuarantee"]
