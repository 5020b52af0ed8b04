"""The file sink's writer: one open (in-progress) part file per active bucket.

Threading: every method runs on the sink's task thread; file I/O is blocking (buffered).
Cost on the local file system: one fsync per open part file and checkpoint, one per roll, and
one directory fsync per new part file; nothing per record beyond the buffered write.

Which part files roll at a checkpoint. A part file *stays open* across checkpoints when the
format is a row format and the file system can resume files (:mod:`.recoverable`, the local
file system): then it rolls only if the rolling policy says so (``should_roll_on_checkpoint``,
or its processing-time rule is due), as in Flink. Otherwise every open part file rolls at
every checkpoint: bulk formats (their footer is written at the end, Flink's
``CheckpointRollingPolicy``) and file systems that cannot resume (``memory://``, ``s3://``...;
subtask 0 says so once at INFO when it opens). At the end of input everything rolls.

The longer story: docs/design.md, "Module notes", under this module's name.
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
from undertow.connectors.file.compaction import FileCompactor, FileCompactStrategy, compact
from undertow.connectors.file.policies import (
    BucketAssigner,
    BucketContext,
    OutputFileConfig,
    PartFileInfo,
    RollingPolicy,
)
from undertow.connectors.file.recoverable import FileSinkRecoveryError, recoverable_writer_for
from undertow.connectors.file.writer_state import FileWriterBucketState, plan_restore
from undertow.connectors.sink import SinkWriter, SinkWriterContext
from undertow.core.errors import UndertowError

log = logging.getLogger(__name__)

INPROGRESS = ".inprogress."
MIN_WATERMARK = -(2**63)


class FileSinkWriteError(UndertowError):
    """A record could not be encoded or written, or an open part file could not be persisted;
    names the sink, subtask, file and record."""


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
    #: The subtask index in the file's name: whose share of the output holds it.
    owner: int
    size: int = 0
    #: Recorded by a checkpoint (snapshotted, or resumed): ``close`` must keep it.
    persisted: bool = False

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
        recovered_state: list[Any] | None = None,
        compaction: tuple[FileCompactStrategy, FileCompactor] | None = None,
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
        self.recoverable = recoverable_writer_for(self.fs)
        #: Part files stay open across checkpoints (module doc).
        self.keeps_open = bulk_factory is None and self.recoverable.supports_resume
        self.uid = uuid.uuid4().hex
        self.compaction = compaction
        self.counter = 0
        self.open_parts: dict[str, _PartFile] = {}
        self.rolled: list[FileSinkCommittable] = []
        self._end_of_input = False
        self._next_check = _now_ms() + bucket_check_interval_ms
        if bulk_factory is None and not self.keeps_open and self.subtask == 0:
            log.info(
                "%s: row-format part files roll on every checkpoint, whatever the rolling "
                "policy: %s",
                self._name(),
                self.recoverable.cannot_resume_reason,
            )
        resumed = self._restore(recovered_state or [])
        if clean_up:
            self.clean_up_earlier_attempts(keep=resumed)

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
        stream = self.recoverable.open(path)
        bulk = self.bulk_factory.create(stream) if self.bulk_factory is not None else None
        part = _PartFile(bucket, path, f"{directory}/{final_name}", stream, bulk, now, now,
                         owner=self.subtask)  # fmt: skip
        self.open_parts[bucket] = part
        return part

    def _roll(self, part: _PartFile) -> None:
        """Close ``part``: it becomes pending (committed with the next checkpoint)."""
        del self.open_parts[part.bucket_id]
        if part.bulk is not None:
            part.bulk.finish()
        size = self.recoverable.close_for_commit(part.stream, part.path)
        self.rolled.append(
            FileSinkCommittable(
                self.fs.unstrip_protocol(part.path),
                self.fs.unstrip_protocol(part.final_path),
                size,
                part.owner,
            )
        )

    # -- checkpoints and end ---------------------------------------------------------------
    def flush(self, end_of_input: bool) -> None:
        if end_of_input:
            self._end_of_input = True  # the next prepare_commit rolls everything

    def prepare_commit(self) -> list[Any]:
        now = _now_ms()
        for part in list(self.open_parts.values()):
            if self._end_of_input or self._rolls_at_checkpoint(part, now):
                self._roll(part)
        committables, self.rolled = self.rolled, []
        if self.compaction is not None and len(committables) > 1:
            committables = compact(self.fs, self.recoverable, committables, *self.compaction)
        return committables

    def _rolls_at_checkpoint(self, part: _PartFile, now: int) -> bool:
        if not self.keeps_open:
            return True
        info = part.info()
        if self.policy.should_roll_on_checkpoint(info):
            return True
        return self.policy.should_roll_on_processing_time(info, now)

    def snapshot_state(self, checkpoint_id: int) -> list[Any]:
        """Persist every open part file; one :class:`FileWriterBucketState` each."""
        states: list[Any] = []
        for part in self.open_parts.values():
            if not self.keeps_open:  # prepare_commit rolled them all
                raise FileSinkWriteError(
                    f"{self._name()}: part file {part.path!r} is still open at checkpoint "
                    f"{checkpoint_id}, but this sink cannot resume it (prepare_commit not called?)"
                )
            try:
                resumable = self.recoverable.persist(part.stream, part.path, part.final_path)
            except OSError as err:
                raise FileSinkWriteError(
                    f"{self._name()}: cannot persist in-progress part file {part.path!r} for "
                    f"checkpoint {checkpoint_id}: {err}"
                ) from err
            part.persisted = True
            states.append(
                FileWriterBucketState(
                    part.bucket_id, resumable, part.created, part.updated, self.counter, part.owner
                )
            )
        return states

    def close(self) -> None:
        """Close open part files; delete those no checkpoint recorded (they belong to none)."""
        for part in list(self.open_parts.values()):
            try:
                if part.bulk is not None:  # else it writes its footer to a closed stream
                    part.bulk.abort()
                self.recoverable.abort(part.stream)
                if not part.persisted:
                    self.fs.rm(part.path)
            except Exception as err:  # close must not raise on a half-open state
                log.warning(
                    "%s: cannot remove in-progress file %s: %s", self._name(), part.path, err
                )
        self.open_parts.clear()

    # -- recovery --------------------------------------------------------------------------
    def _restore(self, states: list[Any]) -> frozenset[str]:
        """Resume the part files of ``states``; the paths of the files it resumed."""
        plan = plan_restore(states, self._name())
        if not plan.paths:
            return plan.paths
        if not self.keeps_open:
            reason = (
                "bulk formats roll on every checkpoint"
                if self.bulk_factory is not None
                else self.recoverable.cannot_resume_reason
            )
            raise FileSinkRecoveryError(
                f"{self._name()}: the restored checkpoint has {len(plan.paths)} in-progress part "
                f"file(s) to resume (such as {min(plan.paths)!r}), but this sink cannot resume "
                f"them: {reason}; was the sink's format or path changed?"
            )
        self.counter = max(self.counter, plan.part_counter)
        for state in plan.roll:
            self._roll(self._resume(state))
        for state in plan.resume:
            self._resume(state)
        return plan.paths

    def _resume(self, state: FileWriterBucketState) -> _PartFile:
        recoverable = state.in_progress
        try:
            stream = self.recoverable.recover(recoverable)
        except FileSinkRecoveryError as err:
            raise FileSinkRecoveryError(f"{self._name()}: {err}") from err
        part = _PartFile(state.bucket_id, recoverable.path, recoverable.final_path, stream, None,
                         state.creation_time, state.last_update_time, owner=state.subtask,
                         size=recoverable.valid_length, persisted=True)  # fmt: skip
        self.open_parts[state.bucket_id] = part
        log.info("%s: resumed in-progress part file %s at its checkpointed length %d",
                 self._name(), recoverable.path, recoverable.valid_length)  # fmt: skip
        return part

    def clean_up_earlier_attempts(self, keep: frozenset[str] = frozenset()) -> int:
        """Delete hidden part files of earlier writers of this subtask's share, except the
        paths in ``keep`` (module doc); the number deleted."""
        if not self.fs.exists(self.root):
            return 0
        removed = 0
        for path in self.fs.find(self.root, withdirs=False):
            name = path.rsplit("/", 1)[-1]
            owner = parse_part_subtask(name, self.config)
            if owner is None or owner % self.parallelism != self.subtask or self.uid in name:
                continue
            if path in keep:
                continue
            try:
                self.fs.rm(path)
                removed += 1
            except FileNotFoundError:
                pass
        if removed:
            log.info("%s: removed %d part files of earlier attempts", self._name(), removed)
        return removed
