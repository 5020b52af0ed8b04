"""TaskSettings: the task's options read once, validated with the option and value named."""

from __future__ import annotations

import pytest

from undertow.core.config import Configuration, ConfigurationError
from undertow.runtime.task.settings import TaskSettings


def test_defaults_match_the_options_defaults() -> None:
    assert TaskSettings.of(Configuration()) == TaskSettings()


def test_reads_every_option() -> None:
    settings = TaskSettings.of(Configuration({
        "undertow.task.mailbox-slice": "4 ms",
        "undertow.task.mailbox-slice-during-checkpoint": "1 ms",
        "pipeline.auto-watermark-interval": "50 ms",
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.unaligned.forced": "true",
        "execution.checkpointing.interval": "1 s",
        "pipeline.global-job-parameters": "a:1,b:2",
        "taskmanager.network.memory.max-overdraft-buffers-per-gate": "7",
    }))  # fmt: skip
    assert settings == TaskSettings(
        batch=False, mailbox_slice_ms=4.0, mailbox_slice_checkpoint_ms=1.0,
        auto_watermark_interval_ms=50, unaligned=True, unaligned_forced=True,
        final_checkpoint=True, job_parameters={"a": "1", "b": "2"},
        max_overdraft_buffers_per_gate=7,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "final"),
    [
        ({"execution.checkpointing.interval": "1 s"}, True),
        ({}, False),  # no periodic checkpoints
        ({"execution.checkpointing.interval": "1 s", "execution.runtime-mode": "BATCH"}, False),
        ({"execution.checkpointing.interval": "1 s",
          "execution.checkpointing.checkpoints-after-tasks-finish": "false"}, False),
    ],
)  # fmt: skip
def test_final_checkpoint_needs_periodic_checkpoints_streaming_and_the_option(
    settings: dict[str, str], final: bool
) -> None:
    assert TaskSettings.of(Configuration(settings)).final_checkpoint is final


def test_a_bad_value_names_the_option_and_the_value() -> None:
    bad = Configuration({"taskmanager.network.memory.max-overdraft-buffers-per-gate": "-1"})
    with pytest.raises(ConfigurationError, match=r"max-overdraft-buffers-per-gate.*-1"):
        TaskSettings.of(bad)
