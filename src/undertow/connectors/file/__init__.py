"""File connectors: ``FileSource`` (text lines, JSON lines, CSV, Parquet; static or
continuously monitored) and the exactly-once ``FileSink`` (row formats and Parquet).

One concept per module: :mod:`.split` (splits and positions), :mod:`.formats` (reader formats,
text lines), :mod:`.json_format`, :mod:`.csv_format`, :mod:`.parquet`, :mod:`.bad_records`,
:mod:`.enumerator`, :mod:`.reader`, :mod:`.source`; :mod:`.policies` (rolling, names,
buckets), :mod:`.bulk_writer`, :mod:`.recoverable` (which file systems resume open part
files, and how), :mod:`.writer_state` (the writer's checkpointed state and restore plan),
:mod:`.writer`, :mod:`.committable` (the pure commit decision), :mod:`.committer`,
:mod:`.sink`. Users import them from PyFlink's paths:
``undertow.datastream.connectors.file_system`` and ``undertow.datastream.formats.*``.
"""

from undertow.connectors.file.bad_records import BadRecord, BadRecordError, BadRecordHandling
from undertow.connectors.file.committable import FileSinkCommitError, FileSinkCommittable
from undertow.connectors.file.formats import BulkFormat, StreamFormat
from undertow.connectors.file.policies import (
    BucketAssigner,
    OutputFileConfig,
    RollingPolicy,
)
from undertow.connectors.file.sink import FileSink
from undertow.connectors.file.source import FileSource, FileSourceBuilder
from undertow.connectors.file.split import FileSourceSplit

__all__ = [
    "BadRecord",
    "BadRecordError",
    "BadRecordHandling",
    "BucketAssigner",
    "BulkFormat",
    "FileSink",
    "FileSinkCommitError",
    "FileSinkCommittable",
    "FileSource",
    "FileSourceBuilder",
    "FileSourceSplit",
    "OutputFileConfig",
    "RollingPolicy",
    "StreamFormat",
]
