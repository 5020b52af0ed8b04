"""Worker and network settings: read once from a configuration, bad values named."""

from __future__ import annotations

import pytest

from undertow.core.config import Configuration, ConfigurationError
from undertow.runtime.network.settings import NetworkSettings
from undertow.runtime.worker.settings import WorkerSettings


def test_defaults_are_the_options_defaults() -> None:
    assert WorkerSettings.of(Configuration({})) == WorkerSettings()
    assert NetworkSettings.of(Configuration({})) == NetworkSettings()


def test_each_option_reaches_its_field() -> None:
    settings = WorkerSettings.of(Configuration({
        "taskmanager.memory.segment-size": "64 kb",
        "taskmanager.network.memory.buffers-per-channel": "3",
        "taskmanager.network.memory.floating-buffers-per-gate": "0",
        "taskmanager.network.memory.max-buffers-per-channel": "4",
        "undertow.network.max-frame-size": "1 mb",
        "undertow.network.bind-host": "10.0.0.7",
        "execution.checkpointing.dir": "file:///tmp/ck",
        "execution.checkpointing.unaligned.max-subtasks-per-channel-state-file": "1",
        "state.backend.rocksdb.localdir": "/var/tmp/rocks",
        "execution.state-recovery.ignore-unclaimed-state": "true",
        "undertow.metrics.report-interval": "250 ms",
        "heartbeat.interval": "2 s",
        "undertow.task.mailbox-slice": "5 ms",
        "undertow.worker.gc-threshold": "5000",
    }))  # fmt: skip
    assert settings.network == NetworkSettings(
        segment_size=64 * 1024, buffers_per_channel=3, floating_buffers_per_gate=0,
        max_buffers_per_channel=4, max_frame_size=2**20, bind_host="10.0.0.7",
    )  # fmt: skip
    assert settings.checkpoint_dir == "file:///tmp/ck"
    assert settings.max_subtasks_per_channel_state_file == 1
    assert settings.rocksdb_local_dir == "/var/tmp/rocks"
    assert settings.ignore_unclaimed_state
    assert settings.metrics_interval_s == 0.25
    assert settings.heartbeat_interval_s == 2.0
    assert settings.mailbox_slice_s == 0.005
    assert settings.gc_threshold == 5000


def test_a_bad_value_fails_naming_the_option_and_the_value() -> None:
    with pytest.raises(ConfigurationError, match=r"buffers-per-channel.*0"):
        WorkerSettings.of(Configuration({"taskmanager.network.memory.buffers-per-channel": "0"}))
    with pytest.raises(ConfigurationError, match=r"heartbeat\.interval.*soon"):
        WorkerSettings.of(Configuration({"heartbeat.interval": "soon"}))
    with pytest.raises(ConfigurationError, match=r"gc-threshold.*-1"):
        WorkerSettings.of(Configuration({"undertow.worker.gc-threshold": "-1"}))
