"""PyFlink 2.3's ``test_check_point_config.py`` scenarios, against undertow.

Expected values are what PyFlink 2.3 answers (measured with apache-flink 2.3.0): with
checkpointing off the mode reads ``AT_LEAST_ONCE`` and the interval -1; alignment timeouts are
Durations.
"""

from __future__ import annotations

import pytest

from undertow.common import Duration
from undertow.core.errors import ConfigurationError
from undertow.datastream import (
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    StreamExecutionEnvironment,
)


@pytest.fixture
def env() -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment()


@pytest.fixture
def checkpoints(env: StreamExecutionEnvironment) -> CheckpointConfig:
    return env.get_checkpoint_config()


@pytest.mark.skip(reason="compares constants with the JVM's CheckpointConfig (get_gateway)")
def test_constant() -> None:
    raise AssertionError("needs the JVM")


def test_is_checkpointing_enabled(
    env: StreamExecutionEnvironment, checkpoints: CheckpointConfig
) -> None:
    assert not checkpoints.is_checkpointing_enabled()
    env.enable_checkpointing(1000)
    assert checkpoints.is_checkpointing_enabled()


def test_get_set_checkpointing_mode(
    env: StreamExecutionEnvironment, checkpoints: CheckpointConfig
) -> None:
    # PyFlink 2.3 reports AT_LEAST_ONCE while checkpointing is off, whatever was set.
    assert checkpoints.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    checkpoints.set_checkpointing_mode(CheckpointingMode.EXACTLY_ONCE)
    assert checkpoints.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    env.enable_checkpointing(1000)
    assert checkpoints.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    checkpoints.set_checkpointing_mode(CheckpointingMode.AT_LEAST_ONCE)
    assert checkpoints.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    checkpoints.set_checkpointing_mode(CheckpointingMode.EXACTLY_ONCE)
    assert checkpoints.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE


def test_get_set_checkpoint_interval(checkpoints: CheckpointConfig) -> None:
    assert checkpoints.get_checkpoint_interval() == -1
    checkpoints.set_checkpoint_interval(1000)
    assert checkpoints.get_checkpoint_interval() == 1000


def test_get_set_checkpoint_timeout(checkpoints: CheckpointConfig) -> None:
    assert checkpoints.get_checkpoint_timeout() == 600000
    checkpoints.set_checkpoint_timeout(300000)
    assert checkpoints.get_checkpoint_timeout() == 300000
    for too_short in (0, 9, Duration.of_millis(-1)):  # Flink: at least 10 ms
        with pytest.raises(ConfigurationError, match="must be at least 10 ms"):
            checkpoints.set_checkpoint_timeout(too_short)
    assert checkpoints.get_checkpoint_timeout() == 300000
    checkpoints.set_checkpoint_timeout(10)


def test_get_set_min_pause_between_checkpoints(checkpoints: CheckpointConfig) -> None:
    assert checkpoints.get_min_pause_between_checkpoints() == 0
    checkpoints.set_min_pause_between_checkpoints(100000)
    assert checkpoints.get_min_pause_between_checkpoints() == 100000


def test_get_set_max_concurrent_checkpoints(checkpoints: CheckpointConfig) -> None:
    assert checkpoints.get_max_concurrent_checkpoints() == 1
    checkpoints.set_max_concurrent_checkpoints(2)
    assert checkpoints.get_max_concurrent_checkpoints() == 2


def test_get_set_fail_on_checkpointing_errors(checkpoints: CheckpointConfig) -> None:
    assert checkpoints.is_fail_on_checkpointing_errors()
    checkpoints.set_fail_on_checkpointing_errors(False)
    assert not checkpoints.is_fail_on_checkpointing_errors()
    assert checkpoints.get_tolerable_checkpoint_failure_number() == 2147483647


def test_get_set_externalized_checkpoints_cleanup(checkpoints: CheckpointConfig) -> None:
    # PyFlink 2.x: enable_externalized_checkpoints / ExternalizedCheckpointCleanup became
    # set_externalized_checkpoint_retention / ExternalizedCheckpointRetention.
    assert not checkpoints.is_externalized_checkpoints_enabled()
    assert (
        checkpoints.get_externalized_checkpoint_retention()
        is ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    )
    retain = ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    checkpoints.set_externalized_checkpoint_retention(retain)
    assert checkpoints.is_externalized_checkpoints_enabled()
    assert checkpoints.get_externalized_checkpoint_retention() is retain
    delete = ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION
    checkpoints.set_externalized_checkpoint_retention(delete)
    assert checkpoints.get_externalized_checkpoint_retention() is delete


@pytest.mark.skip(reason="set_prefer_checkpoint_for_recovery was removed in PyFlink 2.x")
def test_get_set_prefer_checkpoint_for_recovery() -> None:
    raise AssertionError("removed API")


def test_is_unaligned_checkpointing_enabled(checkpoints: CheckpointConfig) -> None:
    assert not checkpoints.is_unaligned_checkpoints_enabled()
    assert not checkpoints.is_force_unaligned_checkpoints()
    assert checkpoints.get_alignment_timeout() == Duration.of_millis(0)
    checkpoints.enable_unaligned_checkpoints()
    assert checkpoints.is_unaligned_checkpoints_enabled()
    checkpoints.disable_unaligned_checkpoints()
    assert not checkpoints.is_unaligned_checkpoints_enabled()
    checkpoints.enable_unaligned_checkpoints(True)
    assert checkpoints.is_unaligned_checkpoints_enabled()
    checkpoints.set_force_unaligned_checkpoints(True)
    assert checkpoints.is_force_unaligned_checkpoints()
    checkpoints.set_alignment_timeout(Duration.of_minutes(1))
    assert checkpoints.get_alignment_timeout() == Duration.of_minutes(1)
    assert checkpoints.get_aligned_checkpoint_timeout() == Duration.of_minutes(1)
