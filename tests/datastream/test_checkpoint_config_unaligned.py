"""The unaligned-checkpoint switches of CheckpointConfig map to Flink's option keys."""

from __future__ import annotations

from undertow.common import Configuration, Duration
from undertow.datastream.checkpoint_config import CheckpointConfig


def test_unaligned_switches_set_flinks_keys() -> None:
    config = Configuration()
    checkpoints = CheckpointConfig(config)
    assert not checkpoints.is_unaligned_checkpoints_enabled()
    assert not checkpoints.is_force_unaligned_checkpoints()
    checkpoints.enable_unaligned_checkpoints().set_force_unaligned_checkpoints()
    checkpoints.set_aligned_checkpoint_timeout(1500)
    settings = config.to_dict()
    assert settings["execution.checkpointing.unaligned.enabled"] in (True, "true")
    assert settings["execution.checkpointing.unaligned.forced"] in (True, "true")
    assert checkpoints.get_aligned_checkpoint_timeout() == Duration.of_millis(1500)


def test_deprecated_alignment_timeout_key_is_read() -> None:
    config = Configuration({"execution.checkpointing.alignment-timeout": "2 s"})
    assert CheckpointConfig(config).get_aligned_checkpoint_timeout() == Duration.of_millis(2000)
