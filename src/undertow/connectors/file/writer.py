"""The file sink's writer: one open (in-progress) part file per active bucket.

Runs on the sink's task thread; blocking file I/O (buffered by fsspec). Lifecycle:

* ``write``: pick the bucket (:class:`~.policies.BucketAssigner`), open a part file there if
  none is open (a hidden name, ``.<final name>.inprogress.<uuid>``), append the record, roll
  the part file if the rolling policy says so after this record. At most once per
  ``bucket_check_interval`` the writer also asks the policy about processing time.
* ``prepare_commit`` (before every checkpoint barrier, and at the end of input): close every
  open part file and return it as a :class:`~.committable.FileSinkCommittable` together with the
  files rolled since the last call. Closed files stay hidden until committed.
* ``close`` (also after a failure): close open files and delete them; they belong to no
  checkpoint.

Names: ``<prefix>-<uuid>-<subtask>-<counter><suffix>``: the uuid is new for every writer (every
attempt of every subtask), so names never collide across subtasks, restarts or jobs writing
into the same directory.

Recovery: a writer of a restarted job first deletes the hidden part files left by earlier
writers whose subtask index ``j`` satisfies ``j % parallelism == subtask`` (pending files of
the restored checkpoint were committed before, so what is left belongs to no completed
checkpoint and its data will be written again).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, BinaryIO

import fsspec  # type: ignore[import-untyped]

from undertow.common.serialization import Encoder
from undertow.connectors.file.bulk_writer import BulkWriter, BulkWriterFactory
from undertow.connectors.file.committable import FileSinkCommittable
from undertow.connectors.file.policies import (
    BucketAssigner,
    BucketContext,
    OutputFileConfig,
    PartFileInfo,
    RollingPolicy,
)
from undertow.connectors.sink import SinkWriter, SinkWriterContext
from undertow.core.errors import UndertowError

log = logging.getLogger(__name__)

INPROGRESS = ".inprogress."
MIN_WATERMARK = -(2**63)


class FileSinkWriteError(UndertowError):
    """A record could not be encoded or written; names the sink, subtask, file and record."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class _PartFile:
    """An open in-progress part file."""

    bucket_id: str
    path: str  # in the file system, no protocol
    final_path: str
    stream: BinaryIO
    bulk: BulkWriter | None
    created: int
    updated: int
    size: int = 0

    def info(self) -> PartFileInfo:
        return PartFileInfo(self.bucket_id, self.created, self.updated, self.size)


def parse_part_subtask(name: str, config: OutputFileConfig) -> int | None:
    """The subtask index in a hidden in-progress file name of this config, else ``None``."""
    if not name.startswith("." + config.part_prefix + "-") or INPROGRESS not in name:
        return None
    final = name[1:].rsplit(INPROGRESS, 1)[0]
    if config.part_suffix:
        if not final.endswith(config.part_suffix):
            return None
        final = final[: -len(config.part_suffix)]
    parts = final[len(config.part_prefix) + 1 :].rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return int(parts[1])


class FileWriter(SinkWriter):
    def __init__(
        self,
        context: SinkWriterContext,
        base_path: str,
        encoder: Encoder | None,
        bulk_factory: BulkWriterFactory | None,
        bucket_assigner: BucketAssigner,
        rolling_policy: RollingPolicy,
        output_config: OutputFileConfig,
        bucket_check_interval_ms: int,
        clean_up: bool,
    ) -> None:
        self.fs, root = fsspec.core.url_to_fs(base_path)
        self.root = root.rstrip("/")
        self.subtask = context.subtask_index()
        self.parallelism = context.parallelism()
        self.encoder = encoder
        self.bulk_factory = bulk_factory
        self.assigner = bucket_assigner
        self.policy = rolling_policy
        self.config = output_config
        self.check_interval_ms = bucket_check_interval_ms
        self.uid = uuid.uuid4().hex
        self.counter = 0
        self.open_parts: dict[str, _PartFile] = {}
        self.rolled: list[FileSinkCommittable] = []
        self._next_check = _now_ms() + bucket_check_interval_ms
        if clean_up:
            self.clean_up_earlier_attempts()

    def _name(self) -> str:
        return f"FileSink {self.root!r} (subtask {self.subtask + 1}/{self.parallelism})"

    # -- writing ---------------------------------------------------------------------------
    def write(self, element: Any, timestamp: int | None) -> None:
        now = _now_ms()
        bucket = self.assigner.get_bucket_id(element, BucketContext(now, MIN_WATERMARK, timestamp))
        part = self.open_parts.get(bucket)
        if part is None:
            part = self._open_part(bucket, now)
        try:
            if part.bulk is not None:
                part.bulk.add_element(element)
                part.size = part.stream.tell()
            else:
                assert self.encoder is not None
                data = self.encoder.encode(element)
                part.stream.write(data)
                part.size += len(data)
        except Exception as err:
            raise FileSinkWriteError(
                f"{self._name()}: cannot write {element!r} to part file {part.final_path!r}: {err}"
            ) from err
        part.updated = now
        if self.policy.should_roll_on_event(part.info()):
            self._roll(part)
        if now >= self._next_check:
            self._next_check = now + self.check_interval_ms
            for open_part in list(self.open_parts.values()):
                if self.policy.should_roll_on_processing_time(open_part.info(), now):
                    self._roll(open_part)

    def _open_part(self, bucket: str, now: int) -> _PartFile:
        directory = f"{self.root}/{bucket.strip('/')}" if bucket.strip("/") else self.root
        final_name = (
            f"{self.config.part_prefix}-{self.uid}-{self.subtask}-{self.counter}"
            f"{self.config.part_suffix}"
        )
        self.counter += 1
        path = f"{directory}/.{final_name}{INPROGRESS}{uuid.uuid4().hex}"
        self.fs.makedirs(directory, exist_ok=True)
        stream = self.fs.open(path, "wb")
        bulk = self.bulk_factory.create(stream) if self.bulk_factory is not None else None
        part = _PartFile(bucket, path, f"{directory}/{final_name}", stream, bulk, now, now)
        self.open_parts[bucket] = part
        return part

    def _roll(self, part: _PartFile) -> None:
        """Close ``part``: it becomes pending (committed with the next checkpoint)."""
        del self.open_parts[part.bucket_id]
        if part.bulk is not None:
            part.bulk.finish()
        part.stream.close()
        size = int(self.fs.info(part.path).get("size") or 0)
        self.rolled.append(
            FileSinkCommittable(
                self.fs.unstrip_protocol(part.path),
                self.fs.unstrip_protocol(part.final_path),
                size,
                self.subtask,
            )
        )

    # -- checkpoints and end ---------------------------------------------------------------
    def prepare_commit(self) -> list[Any]:
        for part in list(self.open_parts.values()):
            self._roll(part)
        committables, self.rolled = self.rolled, []
        return committables

    def close(self) -> None:
        """Abandon open part files (after a failure they belong to no checkpoint)."""
        for part in list(self.open_parts.values()):
            try:
                if part.bulk is not None:  # else it writes its footer to a closed stream
                    part.bulk.abort()
                part.stream.close()
                self.fs.rm(part.path)
            except Exception as err:  # close must not raise on a half-open state
                log.warning(
                    "%s: cannot remove in-progress file %s: %s", self._name(), part.path, err
                )
        self.open_parts.clear()

    # -- recovery --------------------------------------------------------------------------
    def clean_up_earlier_attempts(self) -> int:
        """Delete hidden part files of earlier writers of this subtask's share (module doc)."""
        if not self.fs.exists(self.root):
            return 0
        removed = 0
        for path in self.fs.find(self.root, withdirs=False):
            name = path.rsplit("/", 1)[-1]
            owner = parse_part_subtask(name, self.config)
            if owner is None or owner % self.parallelism != self.subtask or self.uid in name:
                continue
            try:
                self.fs.rm(path)
                removed += 1
            except FileNotFoundError:
                pass
        if removed:
            log.info("%s: removed %d part files of earlier attempts", self._name(), removed)
        return removed
