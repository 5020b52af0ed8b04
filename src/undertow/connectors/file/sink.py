"""``FileSink``: exactly-once part files (PyFlink's builder API).

::

    sink = (FileSink.for_row_format("/out", Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_suffix(".txt").build())
            .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=1 << 20))
            .build())
    stream.sink_to(sink)

    FileSink.for_bulk_format("/out", ParquetBulkWriters.for_row_type(row_type)).build()

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import copy
from typing import Any

from undertow.common.serialization import Encoder, SupportsEncode
from undertow.connectors.file.bulk_writer import BulkWriterFactory
from undertow.connectors.file.committer import FileCommitter
from undertow.connectors.file.compaction import FileCompactor, FileCompactStrategy
from undertow.connectors.file.policies import (
    BasePathBucketAssigner,
    BucketAssigner,
    DefaultRollingPolicy,
    OnCheckpointRollingPolicy,
    OutputFileConfig,
    RollingPolicy,
)
from undertow.connectors.file.writer import FileWriter
from undertow.connectors.sink import Committer, Sink, SinkWriter, SinkWriterContext

DEFAULT_BUCKET_CHECK_INTERVAL_MS = 60 * 1000


class FileSink(Sink):
    def __init__(
        self,
        base_path: str,
        encoder: Encoder | None,
        bulk_factory: BulkWriterFactory | None,
        bucket_assigner: BucketAssigner,
        rolling_policy: RollingPolicy,
        output_config: OutputFileConfig,
        bucket_check_interval_ms: int,
        compaction: tuple[FileCompactStrategy, FileCompactor] | None = None,
    ) -> None:
        if not isinstance(base_path, str) or not base_path:
            raise ValueError(f"FileSink: base path must be a non-empty string, got {base_path!r}")
        self.base_path = base_path
        self.encoder = encoder
        self.bulk_factory = bulk_factory
        self.bucket_assigner = bucket_assigner
        self.rolling_policy = rolling_policy
        self.output_config = output_config
        self.bucket_check_interval_ms = bucket_check_interval_ms
        if compaction is not None and bulk_factory is not None and compaction[1].concat:
            raise ValueError(
                f"FileSink at {base_path!r}: concat_file_compactor() cannot merge bulk part "
                f"files (concatenated {bulk_factory!r} files are not one file of that format); "
                f"use identical_file_compactor() or no compaction"
            )
        self.compaction = compaction

    def with_encoder(self, encoder: Encoder) -> FileSink:
        """A copy of this row-format sink that encodes records with ``encoder``."""
        clone = copy.copy(self)
        clone.encoder = encoder
        return clone

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> RowFormatBuilder:
        if not isinstance(encoder, SupportsEncode):
            raise TypeError(f"FileSink.for_row_format(): expected an Encoder, got {encoder!r}")
        return RowFormatBuilder(base_path, encoder)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: BulkWriterFactory) -> BulkFormatBuilder:
        if not isinstance(writer_factory, BulkWriterFactory):
            raise TypeError(
                f"FileSink.for_bulk_format(): expected a bulk writer factory such as "
                f"ParquetBulkWriters.for_row_type(...), got {writer_factory!r}"
            )
        return BulkFormatBuilder(base_path, writer_factory)

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        restored = context.restored_checkpoint_id() is not None or context.attempt_number() > 0
        return self._writer(context, clean_up=restored, recovered_state=[])

    def restore_writer(self, context: SinkWriterContext, recovered_state: list[Any]) -> SinkWriter:
        """A writer that resumes the part files ``recovered_state`` recorded (row formats on a
        file system that resumes) and cleans up what earlier attempts left."""
        return self._writer(context, clean_up=True, recovered_state=recovered_state)

    def _writer(
        self, context: SinkWriterContext, clean_up: bool, recovered_state: list[Any]
    ) -> FileWriter:
        return FileWriter(
            context,
            self.base_path,
            self.encoder,
            self.bulk_factory,
            self.bucket_assigner,
            self.rolling_policy,
            self.output_config,
            self.bucket_check_interval_ms,
            clean_up=clean_up,
            recovered_state=recovered_state,
            compaction=self.compaction,
        )

    def create_committer(self) -> Committer:
        return FileCommitter()

    def __repr__(self) -> str:
        what = self.encoder if self.encoder is not None else self.bulk_factory
        return f"FileSink({self.base_path!r}, {what!r})"


class _Builder:
    def __init__(self, base_path: str) -> None:
        self._base_path = base_path
        self._assigner: BucketAssigner = BasePathBucketAssigner()
        self._config = OutputFileConfig()
        self._check_interval = DEFAULT_BUCKET_CHECK_INTERVAL_MS
        self._policy: RollingPolicy = OnCheckpointRollingPolicy()
        self._compaction: tuple[FileCompactStrategy, FileCompactor] | None = None

    def enable_compact(self, strategy: FileCompactStrategy, compactor: FileCompactor) -> Any:
        """Merge each checkpoint's part files per bucket before commit (:mod:`.compaction`)."""
        if not isinstance(strategy, FileCompactStrategy) or not isinstance(
            compactor, FileCompactor
        ):
            raise TypeError(
                f"enable_compact(): expected a FileCompactStrategy and a FileCompactor, got "
                f"{strategy!r}, {compactor!r}"
            )
        self._compaction = (strategy, compactor)
        return self

    def disable_compact(self) -> Any:
        self._compaction = None
        return self

    def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> Any:
        if not isinstance(bucket_assigner, BucketAssigner):
            raise TypeError(
                f"with_bucket_assigner(): expected a BucketAssigner, got {bucket_assigner!r}"
            )
        self._assigner = bucket_assigner
        return self

    def with_output_file_config(self, output_file_config: OutputFileConfig) -> Any:
        if not isinstance(output_file_config, OutputFileConfig):
            raise TypeError(
                f"with_output_file_config(): expected an OutputFileConfig, "
                f"got {output_file_config!r}"
            )
        self._config = output_file_config
        return self

    def with_bucket_check_interval(self, interval: int) -> Any:
        """How often (ms) open part files are checked against processing-time rolling."""
        if interval <= 0:
            raise ValueError(f"with_bucket_check_interval(): must be positive, got {interval}")
        self._check_interval = int(interval)
        return self

    def with_rolling_policy(self, rolling_policy: RollingPolicy) -> Any:
        if not isinstance(rolling_policy, RollingPolicy):
            raise TypeError(
                f"with_rolling_policy(): expected a RollingPolicy, got {rolling_policy!r}"
            )
        self._policy = rolling_policy
        return self


class RowFormatBuilder(_Builder):
    def __init__(self, base_path: str, encoder: Encoder) -> None:
        super().__init__(base_path)
        self._encoder = encoder
        self._policy = DefaultRollingPolicy()

    def build(self) -> FileSink:
        return FileSink(
            self._base_path,
            self._encoder,
            None,
            self._assigner,
            self._policy,
            self._config,
            self._check_interval,
            self._compaction,
        )


class BulkFormatBuilder(_Builder):
    """Bulk part files roll on every checkpoint; a policy may roll them earlier too."""

    def __init__(self, base_path: str, writer_factory: BulkWriterFactory) -> None:
        super().__init__(base_path)
        self._factory = writer_factory

    def build(self) -> FileSink:
        return FileSink(
            self._base_path,
            None,
            self._factory,
            self._assigner,
            self._policy,
            self._config,
            self._check_interval,
            self._compaction,
        )
