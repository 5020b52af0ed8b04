"""JobMaster supervision that needs no real workers: a launcher whose workers die at once, or
never start."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from undertow.common import Configuration
from undertow.core.errors import ConfigurationError, JobExecutionError
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import build_job_graph
from undertow.runtime.checkpoint.metadata import CheckpointMetadata
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.checkpoint.savepoint import SavepointRequest
from undertow.runtime.master.job_master import JobMaster, JobStatus, is_own_checkpoint
from undertow.runtime.master.settings import DEFAULT_CHECKPOINT_DIR


class DeadOnArrival:
    """Starts nothing; every worker is reported as already ended."""

    def __init__(self) -> None:
        self.launched = 0

    def launch(self, num_workers: int, master: tuple[str, int], secret: bytes, attempt: int,
               config: dict[str, str]) -> None:  # fmt: skip
        self.num_workers = num_workers
        self.launched += 1

    def wait(self, timeout: float) -> bool:
        return True

    def kill(self) -> None:
        pass

    def exited(self) -> list[int]:
        return list(range(self.num_workers))

    def describe_exit(self, worker_index: int) -> str:
        return "exit code 3"


def test_a_worker_that_dies_before_registering_fails_the_job_at_once() -> None:
    env = StreamExecutionEnvironment(Configuration({"rest.port": "-1"}))
    env.from_collection([1, 2, 3]).map(str).print()
    graph = build_job_graph(env.get_stream_graph("doa"))
    launcher = DeadOnArrival()
    master = JobMaster(graph, Configuration({"rest.port": "-1"}), launcher, num_workers=1)
    started = time.monotonic()
    master.start()
    with pytest.raises(JobExecutionError, match=r"ended before registering: worker 0: exit code 3"):
        master.wait(timeout=10)
    assert time.monotonic() - started < 5, "noticed at once, not at the registration timeout"
    assert master.status is JobStatus.FAILED
    assert launcher.launched == 1  # no restart strategy configured: no second attempt


class NeverStarts(DeadOnArrival):
    """Starts nothing, and no worker ever ends: a cluster with no free slot."""

    def exited(self) -> list[int]:
        return []


def test_workers_that_never_register_fail_the_attempt_at_the_slot_request_timeout() -> None:
    config = {"rest.port": "-1", "slot.request.timeout": "300 ms"}
    env = StreamExecutionEnvironment(Configuration(config))
    env.from_collection([1, 2, 3]).map(str).print()
    graph = build_job_graph(env.get_stream_graph("no slots"))
    master = JobMaster(graph, Configuration(config), NeverStarts(), num_workers=2)
    master.start()
    with pytest.raises(JobExecutionError, match=r"workers \[0, 1\] did not register within "
                       r"0.3 s \(slot.request.timeout\)"):  # fmt: skip
        master.wait(timeout=10)
    assert master.status is JobStatus.FAILED


def test_the_job_masters_settings_are_read_once_when_it_is_made(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment(Configuration({"rest.port": "-1"}))
    env.from_collection([1, 2, 3]).map(str).print()
    graph = build_job_graph(env.get_stream_graph("settings"))
    config = {"rest.port": "-1", "execution.checkpointing.savepoint-dir": str(tmp_path / "sp")}
    master = JobMaster(graph, Configuration(config), DeadOnArrival(), num_workers=1)
    resolved = master.resolve_savepoint_directory(SavepointRequest(""))
    assert resolved.target_directory == str(tmp_path / "sp")  # the configured default
    # the default checkpoint directory reaches the workers with the job's configuration
    assert master.config.to_dict()["execution.checkpointing.dir"] == DEFAULT_CHECKPOINT_DIR
    with pytest.raises(ConfigurationError, match=r"heartbeat\.timeout.*'never'"):
        JobMaster(graph, Configuration({"heartbeat.timeout": "never"}), DeadOnArrival(), 1)


def test_only_the_jobs_own_checkpoints_have_channel_state_files_to_refer_to() -> None:
    """A failover restore of one of the job's checkpoints may be referred to by checkpoints
    during recovery; a snapshot restored from a path (CLAIM or NO_CLAIM: its files are the
    user's, or another job's) never, nor another job's checkpoint."""
    meta = CheckpointMetadata("job-a", 3, 1, 2, False, ())
    own = RestorePlan(meta, "file:///ckpts", "job-a", {}, {})
    assert is_own_checkpoint(own, "job-a")
    assert not is_own_checkpoint(replace(own, pointer="file:///ckpts/job-a/chk-3"), "job-a")
    assert not is_own_checkpoint(own, "job-b")
