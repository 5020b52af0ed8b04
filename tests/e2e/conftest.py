"""Shared fixtures of the end-to-end suite: every test runs once per deployment target.

``target`` is ``local-threads`` (workers are threads of the test process), ``local`` (workers
are child processes) or ``spark`` (workers are a barrier stage of the suite's one local Spark
context, master ``local[2]``); all use real TCP between workers. ``make_env`` builds a
``StreamExecutionEnvironment`` for the current target. ``printed`` turns what ``print()`` sinks
wrote (captured by ``capsys``) into lines.

Tests go through the public API only and compute expected results with plain Python over their
input, never with undertow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from undertow.common import Configuration
from undertow.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

TARGETS = ["local-threads", "local", "spark"]

EnvFactory = Callable[..., StreamExecutionEnvironment]


@pytest.fixture(params=TARGETS)
def target(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_env(target: str, request: pytest.FixtureRequest) -> EnvFactory:
    """``make_env(parallelism=2, mode=None, config=None)``: an environment on ``target``
    with the given default parallelism, runtime mode and extra configuration keys."""
    if target == "spark":
        request.getfixturevalue("spark_context")

    def build(
        parallelism: int = 2,
        mode: RuntimeExecutionMode | None = None,
        config: dict[str, Any] | None = None,
    ) -> StreamExecutionEnvironment:
        settings: dict[str, Any] = {"execution.target": target}
        settings.update(config or {})
        env = StreamExecutionEnvironment.get_execution_environment(Configuration(settings))
        env.set_parallelism(parallelism)
        if mode is not None:
            env.set_runtime_mode(mode)
        return env

    return build


@pytest.fixture
def printed(capsys: pytest.CaptureFixture[str]) -> Callable[[], list[str]]:
    """Lines written to stdout since the last call (``print()`` sinks forward to the driver)."""

    def read() -> list[str]:
        return capsys.readouterr().out.splitlines()

    return read
