"""``RuntimeExecutionMode`` (PyFlink's ``pyflink.datastream.RuntimeExecutionMode``); defined in
:mod:`undertow.core.modes`, where the runtime reads it too."""

from __future__ import annotations

from undertow.core.modes import RuntimeExecutionMode

__all__ = ["RuntimeExecutionMode"]
