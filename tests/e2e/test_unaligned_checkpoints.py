"""Unaligned checkpoints and aligned ones with a 1 ms timeout under forced backpressure
(docs/testing.md): the oracle PIPELINE at p=2 with one exclusive and one floating buffer per
channel, 4 KiB segments (records up to 64 KiB span many buffers) and a sink that spins on
every record, with scheduled failures, a random kill -9 and rescaled restores. All six
oracle counts must be 0, and every restore is observed, not inferred: its console line names
the checkpoint and its in-flight data, REST ``latest.restored`` shows it, and the finishing
attempt resumed its source, restored state and received records replayed from channel state
(of an earlier epoch) before live data of the same key (:mod:`.restore_evidence`).
"""

from __future__ import annotations

import math
import pickle
import time
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.core.errors import RestoreError
from undertow.datastream import JobClient, MapFunction
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.runtime.checkpoint.channel_state_files import DEFAULT_MAX_SUBTASKS_PER_FILE
from undertow.runtime.checkpoint.channel_state_handles import ChannelStateHandles
from undertow.runtime.checkpoint.metadata import decode_metadata
from undertow.storage import CheckpointStorage
from undertow.storage.keys import read_key
from undertow.testing.oracle import (
    FailingMap,
    OracleResult,
    OracleSource,
    build_pipeline,
    oracle_seed,
)

from .conftest import EnvFactory
from .kills import run_killing_a_worker_after_a_checkpoint
from .restore_evidence import RestWatcher, assert_restores, restored_checkpoints
from .restore_evidence import evidence as evidence_of

KEYS, RECORDS_PER_KEY = 10, 300
RATE = 2_000.0  # records per second per source reader: about 1.5 s of source time
SINK_SPIN_S = 0.0005
JOB_TIMEOUT_S = 120.0
MODES = {
    "unaligned": {"execution.checkpointing.unaligned.enabled": "true"},
    "aligned-1ms-timeout": {
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.aligned-checkpoint-timeout": "1 ms",
    },
}


def config(directory: Path, mode: str, restarts: int) -> dict[str, Any]:
    settings = {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(directory),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        "taskmanager.memory.segment-size": "4 kb",
        "taskmanager.network.memory.buffers-per-channel": "1",
        "taskmanager.network.memory.floating-buffers-per-gate": "1",
        "taskmanager.network.memory.max-buffers-per-channel": "2",
    }
    settings.update(MODES[mode])
    return settings


def assert_channel_state_in_shared_files(
    root: Path, storage: CheckpointStorage, checkpoint_ids: list[int], num_workers: int
) -> None:
    """Channel state of the checkpoints is in shared channel-state files: per worker at most
    ceil(its subtasks / 5), each file holding subtasks of one worker only (subtask ``s`` runs
    on worker ``s % num_workers``), one merged handle per subtask and side in ``_metadata``,
    and none of it in the subtasks' own state files."""
    key = read_key()
    assert key is not None
    persisted = 0
    for cid in checkpoint_ids:
        meta = decode_metadata(storage.read_metadata(cid), key, where=str(root))
        names = [p.name for p in (root / storage.job_id / f"chk-{cid}").iterdir()]
        files = [n for n in names if n.startswith("channel-state-")]
        referenced: dict[str, set[int]] = {}
        for vertex in meta.vertices:
            for subtask, handles in vertex.channel_state.items():
                assert subtask in range(vertex.parallelism)
                assert isinstance(handles, ChannelStateHandles)
                for handle in (handles.input, handles.output):
                    if handle is not None:
                        assert handle.checkpoint_id == cid
                    if handle is not None and handle.file is not None:
                        referenced.setdefault(handle.file.path, set()).add(subtask % num_workers)
                persisted += handles.persisted_bytes
            for handle in vertex.subtasks.values():
                snapshot = pickle.loads(storage.read_file(handle, cid))
                assert snapshot.channel_state is None, (cid, handle.path)
        assert sorted(p.rsplit("/", 1)[-1] for p in referenced) == sorted(files), (cid, names)
        assert all(len(workers) == 1 for workers in referenced.values()), referenced
        for worker in range(num_workers):
            subtasks = sum(len(range(worker, v.parallelism, num_workers)) for v in meta.vertices)
            mine = [p for p, workers in referenced.items() if workers == {worker}]
            bound = math.ceil(subtasks / DEFAULT_MAX_SUBTASKS_PER_FILE)
            assert len(mine) <= bound, (cid, worker, mine, subtasks)
    assert persisted > 0, "no channel state in the retained checkpoints"


def run(env_or_client: Any) -> Any:
    """The job's result (``env``: executes it first); a hang fails, cancelling the job."""
    client = env_or_client
    if not hasattr(client, "get_job_execution_result"):
        client = env_or_client.execute_async("oracle under backpressure")
    try:
        return client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    except TimeoutError:
        client.cancel()
        raise


def scenario_scheduled_failures(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    mode: str = "unaligned",
) -> None:  # fmt: skip
    """``map`` fails after checkpoints 2 and 5 under backpressure: both restores print their
    checkpoint with in-flight data, and the finishing attempt replayed it."""
    failing = FailingMap(fail_after_checkpoints=[2, 5])
    env = make_env(parallelism=2, config=config(tmp_path, mode, failing.scheduled_failures))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=RATE)
    evidence = tmp_path / "evidence"
    build_pipeline(env, source, failing_map=failing, sink_spin_s=SINK_SPIN_S,
                   evidence_dir=evidence)  # fmt: skip

    client = env.execute_async("oracle under backpressure")
    watcher = RestWatcher(client)
    oracle = OracleResult.from_job_result(run(client), KEYS, RECORDS_PER_KEY, evidence)

    console = capsys.readouterr().err
    assert_restores(console, watcher.stop(), restores=2)
    restored = restored_checkpoints(console)
    evidence_of(all(size > 0 for _, _, size in restored), f"{restored}:\n{console}")
    oracle.assert_restored(replayed=True)  # before the counts: a lost restore shows as itself
    oracle.assert_exactly_once()
    assert oracle.restarts == 2, (oracle, console)


def scenario_scheduled_failures_aligned_timeout(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_scheduled_failures(make_env, tmp_path, capsys, "aligned-1ms-timeout")


@pytest.mark.restores
@pytest.mark.parametrize("mode", list(MODES))
def test_scheduled_failures_under_backpressure(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    scenario_scheduled_failures(make_env, tmp_path, capsys, mode)


def scenario_random_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    mode: str = "unaligned",
) -> None:  # fmt: skip
    """kill -9 of a seeded random worker once a checkpoint completed, under backpressure."""
    seed = oracle_seed()
    env = make_env(parallelism=2, config=config(tmp_path, mode, restarts=3))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=RATE)
    evidence = tmp_path / "evidence"
    build_pipeline(env, source, sink_spin_s=SINK_SPIN_S, evidence_dir=evidence)

    client = env.execute_async("oracle under backpressure")
    watcher = RestWatcher(client)
    result, console = run_killing_a_worker_after_a_checkpoint(
        client,
        capsys,
        seed,
        earliest_s=0.1,
        latest_s=0.8,
        timeout_s=JOB_TIMEOUT_S,
        checkpoints=3,
    )
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, evidence)

    assert oracle.is_exactly_once, (seed, str(oracle), console)
    assert oracle.restarts == 1, (seed, oracle)
    assert_restores(console, watcher.stop(), restores=1)
    oracle.assert_restored()


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local", "spark"])
@pytest.mark.parametrize("mode", list(MODES))
def test_random_worker_kill_under_backpressure(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    scenario_random_kill(make_env, tmp_path, capsys, mode)


def channel_state_bytes(root: Path, storage: CheckpointStorage, checkpoint_id: int) -> int:
    """In-flight bytes (channel state, both sides, all subtasks) of a retained checkpoint."""
    key = read_key()
    assert key is not None
    meta = decode_metadata(storage.read_metadata(checkpoint_id), key, where=str(root))
    return sum(h.persisted_bytes for v in meta.vertices for h in v.channel_state.values())


def checkpoints_with_channel_state(root: Path) -> list[int]:
    """Completed checkpoints under ``root`` (one job) that hold channel state, oldest first."""
    jobs = [d for d in root.iterdir() if d.is_dir() and not d.name.startswith("_")]
    if len(jobs) != 1 or read_key() is None:
        return []
    storage = CheckpointStorage(str(root), jobs[0].name)
    try:
        return [c for c in storage.completed_checkpoint_ids()
                if channel_state_bytes(root, storage, c) > 0]  # fmt: skip
    except Exception:  # a checkpoint being subsumed while we look
        return []


#: The checkpoint a job must have reached, with channel state, before a test cancels it to
#: restore from it.
CHANNEL_STATE_FROM = 3


def until_channel_state_retained(root: Path) -> None:
    """Wait (30 s at most: processes start slower than threads) until the job under ``root``
    completed a checkpoint with channel state numbered :data:`CHANNEL_STATE_FROM` or later.
    Not the first: a cancel at checkpoint 1, right after the start, leaves the restored job
    the whole input under checkpoints every 100 ms; at load 30 three such restored jobs still
    ran after 120 s (flaky22, 07:10 UTC), which finished with a 0.3 s wait after the first."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
        c >= CHANNEL_STATE_FROM for c in checkpoints_with_channel_state(root)
    ):
        time.sleep(0.1)


def cancel_once_channel_state_retained(
    client: JobClient, root: Path, what: str = ""
) -> tuple[CheckpointStorage, list[int]]:
    """Let the job (retaining on cancellation, under ``root``) run until a checkpoint holds
    channel state, cancel it, and return its storage and the retained checkpoints that hold
    channel state, oldest first (asserting there is one)."""
    until_channel_state_retained(root)
    client.cancel()
    with pytest.raises(Exception):  # noqa: B017 - cancelled
        client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    [job_dir] = [d for d in root.iterdir() if d.is_dir() and not d.name.startswith("_")]
    storage = CheckpointStorage(str(root), job_dir.name)
    with_state = [c for c in storage.completed_checkpoint_ids()
                  if channel_state_bytes(root, storage, c) > 0]  # fmt: skip
    assert with_state, f"no retained checkpoint holds channel state{what}"
    return storage, with_state


@pytest.mark.restores(catches=["channel-state"])
@pytest.mark.parametrize("target", ["local-threads", "local", "spark"])
@pytest.mark.parametrize("new_parallelism", [3, 1])
def test_channel_state_restored_at_another_parallelism(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    new_parallelism: int,
) -> None:  # fmt: skip
    """Rescaling channel state (docs/design.md): an unaligned checkpoint taken under
    backpressure at p=2, retained on cancellation and holding in-flight data, restored with
    ``execution.state-recovery.path`` at a higher and at a lower parallelism (every vertex of
    the PIPELINE changes, so every edge's in-flight records are re-emitted by the producers):
    all six oracle counts are 0 and the replayed records were observed before live data."""
    retain_and_rescale(make_env, tmp_path, capsys, "unaligned", 2, new_parallelism)


def scenario_rescale_up(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retain_and_rescale(make_env, tmp_path, capsys, "unaligned", 2, 3)


#: CI's rescale matrix (both modes, up, down and in place; ``make test`` samples one of each
#: mode); ``make soak`` runs it whole and RESCALE_SOAK.
RESCALE_CI = [("unaligned", 1, 2), ("unaligned", 3, 2), ("unaligned", 2, 2),
              ("aligned-1ms-timeout", 2, 1), ("aligned-1ms-timeout", 2, 4),
              ("aligned-1ms-timeout", 3, 3)]  # fmt: skip
RESCALE_SOAK = [(mode, old, new) for mode in MODES
                for old, new in [(1, 2), (2, 1), (2, 4), (3, 2), (4, 3), (3, 3)]]  # fmt: skip


@pytest.mark.restores
@pytest.mark.sampled("old", "new")  # make test: one rescale per mode and run; make soak: all
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize(("mode", "old", "new"), RESCALE_CI)
def test_rescale_matrix_ci(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str,
    old: int, new: int,
) -> None:  # fmt: skip
    """Six cases of the rescale matrix, both modes: ``make test`` runs one rescale of each
    mode (drawn from the printed seed), ``make soak`` all six."""
    retain_and_rescale(make_env, tmp_path, capsys, mode, old, new)


@pytest.mark.soak
@pytest.mark.restores
@pytest.mark.parametrize("target", ["local-threads", "local"])
@pytest.mark.parametrize(("mode", "old", "new"), RESCALE_SOAK)
def test_rescale_matrix(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str,
    old: int, new: int,
) -> None:  # fmt: skip
    """The full rescale matrix (``make soak``): both modes, up, down and unchanged (in-place
    restore), each vertex of the PIPELINE at its own parallelism, on threads and processes."""
    retain_and_rescale(make_env, tmp_path, capsys, mode, old, new)


def retain_and_rescale(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str,
    old: int, new: int,
) -> None:  # fmt: skip
    """Run the PIPELINE at ``old`` under backpressure until a checkpoint with channel state
    is retained, cancel, restore that checkpoint at ``new``, and fail the restored job once
    right after its first checkpoint (taken while the restored in-flight data may still be
    on its way), so it restores again, from its own checkpoint: all six oracle counts are 0.
    Both jobs chain the same failing map (it never fails in the first), so the chains match
    the channel state."""
    records_per_key = 4 * RECORDS_PER_KEY
    settings = config(tmp_path, mode, restarts=0)
    settings["execution.checkpointing.externalized-checkpoint-retention"] = "RETAIN_ON_CANCELLATION"
    settings["execution.checkpointing.num-retained"] = "3"
    settings["undertow.workers"] = "2"
    env = make_env(parallelism=old, config=settings)
    build_pipeline(env, OracleSource(KEYS, records_per_key, records_per_second=RATE),
                   failing_map=FailingMap(fail_after_checkpoints=[]),
                   sink_spin_s=SINK_SPIN_S)  # fmt: skip
    client = env.execute_async("retain an unaligned checkpoint")
    until_channel_state_retained(tmp_path)
    client.cancel()
    with pytest.raises(Exception):  # noqa: B017 - cancelled
        client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    [job_dir] = [d for d in tmp_path.iterdir() if d.is_dir() and not d.name.startswith("_")]
    storage = CheckpointStorage(str(tmp_path), job_dir.name)
    retained = storage.completed_checkpoint_ids()
    assert retained, "a checkpoint must be retained after cancellation"
    with_state = [c for c in retained if channel_state_bytes(tmp_path, storage, c) > 0]
    assert with_state, f"no retained checkpoint holds channel state: {retained}"
    assert_channel_state_in_shared_files(tmp_path, storage, with_state[-1:], num_workers=2)

    settings["execution.state-recovery.path"] = storage.checkpoint_pointer(with_state[-1])
    settings["restart-strategy.fixed-delay.attempts"] = "1"
    rescaled = make_env(parallelism=new, config=settings)
    # Paced so the restored job runs about 1.5 s at any parallelism: its first checkpoint
    # completes, and the failure after it fires, before the input ends.
    pace = KEYS * records_per_key / (1.5 * new)
    evidence = tmp_path / "evidence"
    build_pipeline(rescaled, OracleSource(KEYS, records_per_key, records_per_second=pace),
                   failing_map=FailingMap(fail_after_checkpoints=[1]),
                   sink_spin_s=SINK_SPIN_S / 5, evidence_dir=evidence)  # fmt: skip
    capsys.readouterr()
    client = rescaled.execute_async("rescaled")
    watcher = RestWatcher(client)
    oracle = OracleResult.from_job_result(run(client), KEYS, records_per_key, evidence)
    ids = assert_restores(capsys.readouterr().err, watcher.stop(), restores=2)
    evidence_of(ids[0] == with_state[-1], f"restored {ids}, retained {with_state}")
    oracle.assert_restored()
    # the rescaled restore replayed in-flight data, in the attempt that then failed
    evidence_of(oracle.replayed_in_any_attempt > 0, f"no replayed record observed: {oracle}")
    oracle.assert_exactly_once()  # replayed_after_live counts as out_of_order
    assert oracle.restarts == 1, oracle


class Spin(MapFunction):
    def map(self, value: Any) -> Any:
        until = time.perf_counter() + SINK_SPIN_S
        while time.perf_counter() < until:
            pass
        return value


def forward_job(env: Any) -> None:
    """source + 'tag' (chained) -> forward -> 'spin' (not chained): the forward edge is the
    only network edge, so all channel state is on it."""
    source = DataGeneratorSource(lambda i: (i, "x" * 200), count=None, records_per_second=RATE)
    tagged = env.from_source(source, WatermarkStrategy.no_watermarks(), "source").uid("source")
    tagged = tagged.map(lambda v: v).name("tag").uid("tag")
    spun = tagged.forward().map(Spin()).name("spin").uid("spin").disable_chaining()
    spun.sink_to(DiscardingSink()).name("discard").uid("discard")


@pytest.mark.parametrize("target", ["local-threads"])
def test_forward_edge_with_channel_state_cannot_be_rescaled(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """With ``unaligned.forced`` a forward edge carries in-flight data; restoring it at another
    parallelism would change which subtask gets which record, so the restore is refused before
    anything runs, naming the checkpoint, the edge and the operator."""
    settings = config(tmp_path, "unaligned", restarts=0)
    settings["execution.checkpointing.unaligned.forced"] = "true"
    settings["execution.checkpointing.externalized-checkpoint-retention"] = "RETAIN_ON_CANCELLATION"
    env = make_env(parallelism=2, config=settings)
    forward_job(env)
    client = env.execute_async("forced unaligned forward edge")
    storage, with_state = cancel_once_channel_state_retained(
        client, tmp_path, " on the forward edge"
    )

    settings["execution.state-recovery.path"] = storage.checkpoint_pointer(with_state[-1])
    rescaled = make_env(parallelism=3, config=settings)
    forward_job(rescaled)
    with pytest.raises(RestoreError, match=rf"checkpoint {with_state[-1]} .*'spin'.*forward"):
        rescaled.execute("rescaled forward edge")
