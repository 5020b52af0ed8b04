"""The option areas (``undertow.core.options_*``) and ``Options``, their union: every area's
options are in ``Options.all()``, none twice; no attribute name and no key is declared by two
areas (``Options`` would silently take the first); each default passes its own check."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.core.config import Configuration, Options
from undertow.core.config_option import ConfigOption
from undertow.core.errors import ConfigurationError
from undertow.core.options_checkpointing import CheckpointingOptions
from undertow.core.options_execution import ExecutionOptions
from undertow.core.options_network import NetworkOptions
from undertow.core.options_rest import RestOptions
from undertow.core.options_state import StateOptions, backend_type

AREAS = [ExecutionOptions, NetworkOptions, CheckpointingOptions, RestOptions, StateOptions]


def _declared(area: type) -> dict[str, ConfigOption[Any]]:
    return {n: v for n, v in vars(area).items() if isinstance(v, ConfigOption)}


def test_options_is_every_area_and_only_them() -> None:
    assert set(Options.__bases__) == set(AREAS)
    by_area = [option for area in AREAS for option in _declared(area).values()]
    assert list(Options.all()) == by_area
    assert len(by_area) > 20


def test_no_two_areas_declare_one_name_or_one_key() -> None:
    names = [name for area in AREAS for name in _declared(area)]
    assert len(names) == len(set(names))
    keys = [key for o in Options.all() for key in (o.key, *o.deprecated_keys)]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("area", AREAS, ids=lambda area: area.__name__)
def test_every_default_is_valid(area: type) -> None:
    for name, option in _declared(area).items():
        assert getattr(Options, name) is option
        assert option.read({}) == option.default
        if option.check is not None:
            assert option.check(option.default) is None, option.key


@pytest.mark.parametrize(
    ("value", "ok"),
    [("hashmap", True), ("rocksdb", True), ("my_pkg.backends.factory", True),
     ("memory", False), ("pkg.", False), (".name", False), ("pkg.1name", False)],
)  # fmt: skip
def test_a_state_backend_is_built_in_or_a_dotted_factory_name(value: str, ok: bool) -> None:
    assert (backend_type(value) is None) is ok
    config = Configuration({"state.backend.type": value})
    if ok:
        assert config.get(Options.STATE_BACKEND) == value
    else:
        with pytest.raises(ConfigurationError, match="dotted name of a state backend factory"):
            config.get(Options.STATE_BACKEND)


@pytest.mark.parametrize(
    ("key", "raw", "ok"),
    [
        ("execution.checkpointing.timeout", "0", False),
        ("execution.checkpointing.timeout", "9 ms", False),
        ("execution.checkpointing.timeout", "10 ms", True),
        ("execution.checkpointing.interval", "0", True),
        ("execution.checkpointing.interval", "5 ms", False),
        ("execution.checkpointing.interval", "10 ms", True),
    ],
)
def test_checkpoint_timeout_and_interval_keep_flinks_minimum(key: str, raw: str, ok: bool) -> None:
    """Flink refuses less than 10 ms for both (an interval of 0 is off): a timeout of 0 expired
    every checkpoint and restarted the job without end (what ``set_checkpoint_timeout``
    already refused, through a configuration key)."""
    option = Options.CHECKPOINT_TIMEOUT if key.endswith("timeout") else Options.CHECKPOINT_INTERVAL
    config = Configuration({key: raw})
    if ok:
        config.get(option)
    else:
        with pytest.raises(ConfigurationError, match=rf"option '{key}' = '{raw}': must be"):
            config.get(option)
