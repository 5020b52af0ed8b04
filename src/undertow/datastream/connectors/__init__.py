"""Source and sink contracts and the built-in connectors (PyFlink's module layout)."""

from undertow.connectors.sink import Committer, Sink, SinkWriter, SinkWriterContext
from undertow.connectors.source import (
    Boundedness,
    InputStatus,
    Source,
    SourceReader,
    SourceReaderContext,
    SourceSplit,
    SplitEnumerator,
    SplitEnumeratorContext,
)
from undertow.datastream.connectors.base import DeliveryGuarantee
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.datastream.connectors.discard import DiscardingSink
from undertow.datastream.connectors.number_seq import NumberSequenceSource

__all__ = [
    "Boundedness",
    "Committer",
    "DataGeneratorSource",
    "DeliveryGuarantee",
    "DiscardingSink",
    "InputStatus",
    "NumberSequenceSource",
    "Sink",
    "SinkWriter",
    "SinkWriterContext",
    "Source",
    "SourceReader",
    "SourceReaderContext",
    "SourceSplit",
    "SplitEnumerator",
    "SplitEnumeratorContext",
]
