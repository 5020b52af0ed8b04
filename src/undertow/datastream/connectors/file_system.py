"""PyFlink's ``pyflink.datastream.connectors.file_system``: ``FileSource`` and ``FileSink``.

Re-exports only; the implementation is :mod:`undertow.connectors.file`. Formats are in
``undertow.datastream.formats.csv`` / ``.json`` / ``.parquet``.
"""

from undertow.connectors.file.bad_records import BadRecord, BadRecordError, BadRecordHandling
from undertow.connectors.file.bulk_writer import BulkWriter, BulkWriterFactory
from undertow.connectors.file.compaction import FileCompactor, FileCompactStrategy
from undertow.connectors.file.formats import BulkFormat, StreamFormat
from undertow.connectors.file.policies import (
    BucketAssigner,
    DateTimeBucketAssigner,
    DefaultRollingPolicy,
    OnCheckpointRollingPolicy,
    OutputFileConfig,
    RollingPolicy,
)
from undertow.connectors.file.providers import FileEnumeratorProvider, FileSplitAssignerProvider
from undertow.connectors.file.sink import BulkFormatBuilder, FileSink, RowFormatBuilder
from undertow.connectors.file.source import FileSource, FileSourceBuilder
from undertow.connectors.file.split import FileSourceSplit

__all__ = [
    "BadRecord",
    "BadRecordError",
    "BadRecordHandling",
    "BucketAssigner",
    "BulkFormat",
    "BulkFormatBuilder",
    "BulkWriter",
    "BulkWriterFactory",
    "DateTimeBucketAssigner",
    "DefaultRollingPolicy",
    "FileCompactStrategy",
    "FileCompactor",
    "FileEnumeratorProvider",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "FileSourceSplit",
    "FileSplitAssignerProvider",
    "OnCheckpointRollingPolicy",
    "OutputFileConfig",
    "RollingPolicy",
    "RowFormatBuilder",
    "StreamFormat",
]
