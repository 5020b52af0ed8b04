"""``RuntimeExecutionMode`` (:mod:`undertow.datastream.execution_mode`) is the runtime's own
enum under PyFlink's import path, with PyFlink's members."""

from __future__ import annotations

from undertow.core.config import Configuration, Options
from undertow.core.modes import RuntimeExecutionMode as RuntimeMode
from undertow.datastream.execution_mode import RuntimeExecutionMode


def test_pyflinks_members_are_the_runtimes_enum() -> None:
    assert RuntimeExecutionMode is RuntimeMode
    assert [m.name for m in RuntimeExecutionMode] == ["STREAMING", "BATCH", "AUTOMATIC"]
    config = Configuration({"execution.runtime-mode": "BATCH"})
    assert RuntimeExecutionMode[config.get(Options.RUNTIME_MODE)] is RuntimeExecutionMode.BATCH
