"""``FileSource``: files as a bounded or continuous FLIP-27 source (PyFlink's builder API).

::

    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/data/in")
              .process_static_file_set()          # bounded (the default)
              .build())
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "files")

The source object is immutable and pickled to every subtask and to the JobMaster: the
enumerator (:mod:`.enumerator`) runs in the JobMaster, readers (:mod:`.reader`) in the
subtasks.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from typing import Any

from undertow.common.time import Duration
from undertow.connectors.file.enumerator import FileEnumerator, restore_state
from undertow.connectors.file.formats import DEFAULT_BATCH_SIZE, BulkFormat, FileFormat
from undertow.connectors.file.formats import StreamFormat as StreamFormat
from undertow.connectors.file.providers import FileEnumeratorProvider, FileSplitAssignerProvider
from undertow.connectors.file.reader import FileSourceReader
from undertow.connectors.file.split import FileSourceSplit
from undertow.connectors.source import (
    Boundedness,
    Source,
    SourceReader,
    SourceReaderContext,
    SplitEnumerator,
    SplitEnumeratorContext,
)

DEFAULT_ENUMERATOR = FileEnumeratorProvider.default_non_splittable_file_enumerator()
DEFAULT_ASSIGNER = FileSplitAssignerProvider.locality_aware_split_assigner()


class FileSource(Source[FileSourceSplit]):
    def __init__(
        self,
        file_format: FileFormat,
        paths: tuple[str, ...],
        discovery_interval_ms: int | None,
        batch_size: int,
        file_enumerator: FileEnumeratorProvider = DEFAULT_ENUMERATOR,
        split_assigner: FileSplitAssignerProvider = DEFAULT_ASSIGNER,
    ) -> None:
        if not paths:
            raise ValueError("FileSource needs at least one path")
        bad = [p for p in paths if not isinstance(p, str) or not p]
        if bad:
            raise TypeError(f"FileSource paths must be non-empty strings, got {bad!r}")
        self.format = file_format
        self.paths = paths
        self.discovery_interval_ms = discovery_interval_ms
        self.batch_size = batch_size
        #: Recorded as PyFlink's builder sets them; both choices behave alike here
        #: (:mod:`.providers`).
        self.file_enumerator = file_enumerator
        self.split_assigner = split_assigner

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        if not isinstance(stream_format, StreamFormat):
            raise TypeError(
                f"for_record_stream_format(): expected a StreamFormat, got {stream_format!r}"
            )
        return FileSourceBuilder(stream_format, paths)

    @staticmethod
    def for_bulk_file_format(bulk_format: BulkFormat, *paths: str) -> FileSourceBuilder:
        if not isinstance(bulk_format, BulkFormat):
            raise TypeError(f"for_bulk_file_format(): expected a BulkFormat, got {bulk_format!r}")
        return FileSourceBuilder(bulk_format, paths)

    def get_produced_type(self) -> Any:
        """The format's record type (``STRING`` for text lines, the schema's row type for
        CSV), as Flink's FileSource declares it; ``None`` where the format has none."""
        return self.format.get_produced_type()

    def get_boundedness(self) -> Boundedness:
        if self.discovery_interval_ms is None:
            return Boundedness.BOUNDED
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader[FileSourceSplit]:
        return FileSourceReader(context, self.format, self.batch_size, self.discovery_interval_ms)

    def create_enumerator(
        self, context: SplitEnumeratorContext[FileSourceSplit]
    ) -> SplitEnumerator[FileSourceSplit]:
        return FileEnumerator(context, self.paths, self.discovery_interval_ms)

    def restore_enumerator(
        self, context: SplitEnumeratorContext[FileSourceSplit], checkpoint: Any
    ) -> SplitEnumerator[FileSourceSplit]:
        state = restore_state(checkpoint, f"FileSource over {list(self.paths)}")
        return FileEnumerator(context, self.paths, self.discovery_interval_ms, state)

    def __repr__(self) -> str:
        mode = (
            "static"
            if self.discovery_interval_ms is None
            else f"monitoring every {self.discovery_interval_ms} ms"
        )
        return f"FileSource({self.format!r}, {list(self.paths)}, {mode})"


class FileSourceBuilder:
    def __init__(self, file_format: FileFormat, paths: tuple[str, ...]) -> None:
        self._format = file_format
        self._paths = tuple(paths)
        self._interval_ms: int | None = None
        self._batch_size = DEFAULT_BATCH_SIZE
        self._enumerator = DEFAULT_ENUMERATOR
        self._assigner = DEFAULT_ASSIGNER

    def monitor_continuously(self, discovery_interval: Duration) -> FileSourceBuilder:
        """Unbounded: look for new files every ``discovery_interval``."""
        millis = (
            discovery_interval.to_milliseconds()
            if isinstance(discovery_interval, Duration)
            else int(discovery_interval)
        )
        if millis <= 0:
            raise ValueError(
                f"monitor_continuously(): the interval must be positive, got {discovery_interval!r}"
            )
        self._interval_ms = millis
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        """Bounded: read the files present when the job starts, then end."""
        self._interval_ms = None
        return self

    def set_batch_size(self, batch_size: int) -> FileSourceBuilder:
        """Records a reader emits per poll (default 1024)."""
        if batch_size < 1:
            raise ValueError(f"set_batch_size(): must be >= 1, got {batch_size}")
        self._batch_size = batch_size
        return self

    def set_file_enumerator(self, file_enumerator: FileEnumeratorProvider) -> FileSourceBuilder:
        """PyFlink's hook; undertow makes one split per file either way (:mod:`.providers`)."""
        if not isinstance(file_enumerator, FileEnumeratorProvider):
            raise TypeError(
                f"set_file_enumerator(): expected a FileEnumeratorProvider, got {file_enumerator!r}"
            )
        self._enumerator = file_enumerator
        return self

    def set_split_assigner(self, split_assigner: FileSplitAssignerProvider) -> FileSourceBuilder:
        """PyFlink's hook; splits go out in path order (:mod:`.providers`)."""
        if not isinstance(split_assigner, FileSplitAssignerProvider):
            raise TypeError(
                f"set_split_assigner(): expected a FileSplitAssignerProvider, "
                f"got {split_assigner!r}"
            )
        self._assigner = split_assigner
        return self

    def build(self) -> FileSource:
        return FileSource(
            self._format,
            self._paths,
            self._interval_ms,
            self._batch_size,
            self._enumerator,
            self._assigner,
        )
