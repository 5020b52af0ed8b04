"""Public class names in the runtime's checkpoint, control, master, worker and task packages
are unique, and the renamed ones are still importable under their old names (with a
deprecation warning)."""

from __future__ import annotations

import collections
import importlib
import pkgutil

import pytest

import undertow.runtime.checkpoint
import undertow.runtime.control
import undertow.runtime.master
import undertow.runtime.task
import undertow.runtime.worker


def test_no_two_runtime_classes_share_a_name() -> None:
    where: dict[str, set[str]] = collections.defaultdict(set)
    packages = (
        undertow.runtime.checkpoint,
        undertow.runtime.control,
        undertow.runtime.master,
        undertow.runtime.worker,
        undertow.runtime.task,
    )
    for package in packages:
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                public = not name.startswith("_")
                if public and isinstance(value, type) and value.__module__ == module.__name__:
                    where[name].add(module.__name__)
    assert {name: sorted(mods) for name, mods in where.items() if len(mods) > 1} == {}


def test_the_old_names_still_import_with_a_warning() -> None:
    from undertow.runtime.checkpoint import barrier_handler
    from undertow.runtime.checkpoint.barrier_states import AlignmentChannels
    from undertow.runtime.control import messages
    from undertow.runtime.control.messages import TriggerSourceCheckpoint

    with pytest.warns(DeprecationWarning, match="TriggerSourceCheckpoint"):
        assert messages.TriggerCheckpoint is TriggerSourceCheckpoint
    with pytest.warns(DeprecationWarning, match="AlignmentChannels"):
        assert barrier_handler.ChannelState is AlignmentChannels
    with pytest.raises(AttributeError, match="NoSuchMessage"):
        messages.NoSuchMessage  # noqa: B018
