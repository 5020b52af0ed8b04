"""Finalising a fully acknowledged checkpoint: the ``_metadata`` assembled from the
acknowledgements (pure), the console line, and the writes into in-memory storage (a
checkpoint committed into its ``chk-<n>``, a savepoint exported to its directory)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.graph.job_graph import JobGraph, build_job_graph
from undertow.runtime.checkpoint.barrier import CheckpointBarrier, SnapshotType
from undertow.runtime.checkpoint.finalization import (
    CheckpointFinalizer,
    CoordinatorPending,
    PendingProps,
    assemble_metadata,
    completion_line,
)
from undertow.runtime.checkpoint.metadata import decode_metadata
from undertow.runtime.checkpoint.pending_checkpoint import PendingCheckpoint
from undertow.runtime.checkpoint.savepoint import BACKEND_PROPERTY, SavepointRequest
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.checkpoint.snapshot import SubtaskStateHandle
from undertow.runtime.checkpoint.trigger_plan import SubtaskTopology
from undertow.storage import FileHandle
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.storage.keys import CheckpointKey
from undertow.testing.coordinator import ManualClock

KEY = b"k" * 32


def job_graph() -> JobGraph:
    """Two source subtasks -> keyed map (2) -> print."""
    env = StreamExecutionEnvironment(Configuration({"rest.port": "-1"}))
    env.set_parallelism(2)
    env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    ).key_by(lambda n: n % 4).map(lambda n: n).name("double").print()
    return build_job_graph(env.get_stream_graph("finalization test"))


def handle(path: str) -> FileHandle:
    return FileHandle(path, 3, hashlib.sha256(path.encode()).hexdigest())


def acknowledged(
    graph: JobGraph,
    savepoint: SavepointRequest | None = None,
    finished: frozenset[tuple[int, int]] = frozenset(),
) -> CoordinatorPending:
    """Checkpoint 7, triggered at 1000, acknowledged by every subtask: the map's subtasks
    with a state file each (subtask 1 also referencing a shared file), sources without."""
    options = CheckpointSettings.of(Configuration({})).options(SnapshotType.CHECKPOINT)
    tasks = [(v.id, s) for v in graph.vertices for s in range(v.parallelism)]
    props = PendingProps(CheckpointBarrier(7, 1000, options), {}, savepoint, finished,
                         frozenset())  # fmt: skip
    pending: CoordinatorPending = PendingCheckpoint(7, 1000, tasks, props)
    [source] = [v.id for v in graph.vertices if v.is_source]
    for vertex_id, subtask in tasks:
        if vertex_id == source:
            state = SubtaskStateHandle()
        else:
            shared = (handle("shared/sst-1"),) if subtask == 1 else ()
            state = SubtaskStateHandle(handle(f"chk-7/v{vertex_id}-{subtask}.state"), None, shared)
        pending.acknowledge((vertex_id, subtask), state, {"alignment_duration_ms": 12.0 + subtask})
    assert pending.is_fully_acknowledged
    return pending


def test_the_metadata_names_every_vertex_its_state_files_and_the_shared_files() -> None:
    graph = job_graph()
    pending = acknowledged(graph)
    coordinators = {0: handle("chk-7/enumerator-v0.state")}
    meta = assemble_metadata("job-1", graph, SubtaskTopology.of(graph), pending, coordinators,
                             {"unaligned": "false"}, now_ms=1500)  # fmt: skip
    assert (meta.job_id, meta.checkpoint_id, meta.trigger_timestamp) == ("job-1", 7, 1000)
    assert meta.completion_timestamp == 1500 and not meta.is_savepoint
    assert meta.coordinators == coordinators and meta.properties == {"unaligned": "false"}
    assert meta.shared_files == (handle("shared/sst-1"),)
    by_id = {v.vertex_id: v for v in meta.vertices}
    assert set(by_id) == {v.id for v in graph.vertices}
    for vertex in graph.vertices:
        assert by_id[vertex.id].name == vertex.name and not by_id[vertex.id].finished
        if vertex.is_source:
            assert not by_id[vertex.id].subtasks  # acknowledged without state
        else:
            assert by_id[vertex.id].subtasks == {
                s: handle(f"chk-7/v{vertex.id}-{s}.state") for s in range(2)
            }


def test_a_vertex_whose_subtasks_all_finished_is_marked_finished() -> None:
    graph = job_graph()
    [source] = [v.id for v in graph.vertices if v.is_source]
    pending = acknowledged(graph, finished=frozenset({(source, 0), (source, 1)}))
    meta = assemble_metadata("job-1", graph, SubtaskTopology.of(graph), pending, {}, {}, 1500)
    assert {v.vertex_id for v in meta.vertices if v.finished} == {source}


def test_the_console_line_says_duration_alignment_debloating_and_mode() -> None:
    graph = job_graph()
    pending = acknowledged(graph)
    meta = assemble_metadata("job-1", graph, SubtaskTopology.of(graph), pending, {}, {}, 1250)
    options = CheckpointSettings.of(Configuration({})).options(SnapshotType.CHECKPOINT)
    line = completion_line(meta, pending.acknowledged_metrics, options)
    assert line.startswith("checkpoint 7 completed in 250 ms, ")
    assert "alignment 13 ms" in line and line.endswith("(aligned)") and "buffers" not in line
    unaligned = options.as_unaligned()
    metrics = {k: {**m, "debloat_estimate_ms": 40.0, "unaligned": True, "persisted_data": 2048}
               for k, m in pending.acknowledged_metrics.items()}  # fmt: skip
    line = completion_line(meta, metrics, unaligned)
    assert ", buffers ~40 ms to consume (unaligned, in-flight " in line


def finalizer(graph: JobGraph, storage: CheckpointStorage) -> CheckpointFinalizer:
    settings = CheckpointSettings.of(Configuration({
        "undertow.checkpointing.metadata.max-size": "1 mb", "state.backend.type": "rocksdb",
    }))  # fmt: skip
    return CheckpointFinalizer("job-1", graph, settings, storage, CheckpointKey.of(KEY),
                               ManualClock(start_ms=1800))  # fmt: skip


def test_a_checkpoint_is_committed_with_its_enumerator_state_and_verifies() -> None:
    graph = job_graph()
    storage = CheckpointStorage.in_memory("job-1")
    pending = acknowledged(graph)
    [source] = [v.id for v in graph.vertices if v.is_source]
    pending.props = PendingProps(pending.props.barrier, {source: ["split-3"]}, None,
                                 frozenset(), frozenset())  # fmt: skip
    finalized = asyncio.run(finalizer(graph, storage).finalize(pending))
    assert finalized.pointer == storage.checkpoint_pointer(7)
    assert storage.completed_checkpoint_ids() == [7]
    payload = storage.read_metadata(7)
    assert len(payload) == finalized.metadata_size
    meta = decode_metadata(payload, KEY, "chk-7", expected_checkpoint_id=7)
    assert meta == finalized.metadata and meta.completion_timestamp == 1800
    enumerator = meta.coordinators[source]
    assert enumerator is not None and enumerator.path == f"chk-7/enumerator-v{source}.state"
    assert meta.properties["alignment_duration_ms"] == "13"


def test_a_savepoint_is_exported_to_its_directory_not_committed() -> None:
    graph = job_graph()
    storage = CheckpointStorage.in_memory("job-1")
    target = f"memory:///savepoints-{uuid.uuid4().hex}"
    pending = acknowledged(graph, savepoint=SavepointRequest(target))
    finalized = asyncio.run(finalizer(graph, storage).finalize(pending))
    assert storage.completed_checkpoint_ids() == []
    assert finalized.pointer == f"{target}/savepoint-job-1-7" and finalized.metadata.is_savepoint
    assert finalized.metadata.properties["savepoint_format"] == "CANONICAL"
    assert finalized.metadata.properties[BACKEND_PROPERTY] == "rocksdb"  # the job's backend
