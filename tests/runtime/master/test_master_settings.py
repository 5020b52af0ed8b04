"""JobMaster settings: read once from the job's configuration, bad values named."""

from __future__ import annotations

import pytest

from undertow.core.config import Configuration, ConfigurationError
from undertow.core.modes import CheckpointingMode, ExternalizedCheckpointRetention
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.master.settings import DEFAULT_CHECKPOINT_DIR, MasterSettings, RestSettings


def test_defaults_are_the_options_defaults() -> None:
    settings = MasterSettings.of(Configuration({}))
    assert settings == MasterSettings(CheckpointSettings.of(Configuration({})))
    assert settings.checkpoint_dir == DEFAULT_CHECKPOINT_DIR  # savepoints need a directory
    assert not settings.periodic_checkpoints and settings.recovery_path == ""


def test_each_option_reaches_its_field() -> None:
    settings = MasterSettings.of(Configuration({
        "execution.checkpointing.dir": "file:///tmp/ck",
        "execution.state-recovery.path": "file:///tmp/ck/old/chk-3",
        "execution.checkpointing.savepoint-dir": "file:///tmp/sp",
        "undertow.network.bind-host": "10.0.0.7",
        "undertow.network.max-frame-size": "1 mb",
        "heartbeat.interval": "2 s",
        "heartbeat.timeout": "9 s",
        "rest.port": "-1",
        "web.checkpoints.history": "3",
        "undertow.collect.buffer-size": "2 mb",
        "execution.checkpointing.interval": "5 s",
        "execution.checkpointing.mode": "AT_LEAST_ONCE",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }))  # fmt: skip
    assert settings.checkpoint_dir == "file:///tmp/ck"
    assert settings.recovery_path == "file:///tmp/ck/old/chk-3"
    assert settings.savepoint_dir == "file:///tmp/sp"
    assert (settings.bind_host, settings.max_frame_size) == ("10.0.0.7", 2**20)
    assert (settings.heartbeat_interval_ms, settings.heartbeat_timeout_ms) == (2000, 9000)
    assert (settings.rest.port, settings.checkpoints_history) == (-1, 3)
    assert settings.collect_buffer_size == 2 * 2**20
    assert settings.periodic_checkpoints and settings.checkpoint.interval_ms == 5000
    assert settings.checkpoint.mode is CheckpointingMode.AT_LEAST_ONCE
    assert settings.checkpoint.retention is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION


def test_the_deprecated_checkpoint_directory_key_is_read() -> None:
    settings = MasterSettings.of(Configuration({"state.checkpoints.dir": "file:///tmp/old"}))
    assert settings.checkpoint_dir == "file:///tmp/old"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("heartbeat.timeout", "0 ms"),
        ("heartbeat.interval", "soon"),
        ("rest.port", "70000"),
        ("web.checkpoints.history", "0"),
        ("execution.checkpointing.mode", "TWICE"),
        ("undertow.network.max-frame-size", "lots"),
    ],
)
def test_a_bad_value_fails_naming_the_option_and_the_value(key: str, value: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        MasterSettings.of(Configuration({key: value}))
    assert key in str(caught.value) and value in str(caught.value)


def test_rest_options_reach_the_rest_settings() -> None:
    settings = MasterSettings.of(Configuration({
        "rest.port": "0",
        "rest.bind-address": "0.0.0.0",
        "rest.token": "  tok  ",
        "rest.token-file": "/tmp/token",
        "rest.savepoint.allow-any-directory": "true",
        "execution.checkpointing.savepoint-dir": "file:///tmp/sp",
        "metrics.reporter.prom.port": "9250-9251",
    })).rest  # fmt: skip
    assert settings == RestSettings(
        port=0,
        bind_address="0.0.0.0",
        token="tok",
        token_file="/tmp/token",
        savepoint_any_directory=True,
        savepoint_dir="file:///tmp/sp",
        prometheus_ports=(9250, 9251),
    )
    assert settings.enabled


def test_without_a_rest_api_there_is_no_prometheus_endpoint() -> None:
    config = Configuration({"rest.port": "-1", "metrics.reporter.prom.port": "9250"})
    settings = RestSettings.of(config)
    assert not settings.enabled and settings.prometheus_ports is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("rest.port", "-2"),
        ("rest.savepoint.allow-any-directory", "maybe"),
        ("metrics.reporter.prom.port", "nine"),
        ("metrics.reporter.prom.factory.class", "x.Other"),
    ],
)
def test_a_bad_rest_value_fails_with_the_settings_naming_option_and_value(
    key: str, value: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        MasterSettings.of(Configuration({key: value}))
    assert key in str(caught.value) and value in str(caught.value)
