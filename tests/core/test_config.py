"""Configuration (:mod:`undertow.core.config`): options under Flink's keys read through it,
PyFlink's accessors and the default parallelism. Parsing text: ``test_option_text``; one
option: ``test_config_option``; the areas that make up ``Options``: ``test_options``."""

from __future__ import annotations

import os
from typing import Any

import pytest

from undertow.core.config import (
    ConfigOption,
    Configuration,
    Options,
    default_parallelism,
)
from undertow.core.errors import ConfigurationError, UndertowError

# -- options read through a Configuration -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ms"), [("0.25 ms", 0.25), ("500 us", 0.5), ("2", 2.0), (0.1, 0.1), ("1 s", 1000.0)]
)
def test_precise_durations_keep_fractions(text: str | float, ms: float) -> None:
    key = "undertow.task.mailbox-slice-during-checkpoint"
    assert Configuration({key: text}).get(Options.MAILBOX_SLICE_CHECKPOINT) == pytest.approx(ms)


def test_mailbox_slices_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match=r"undertow\.task\.mailbox-slice"):
        Configuration({"undertow.task.mailbox-slice": "0 ms"}).get(Options.MAILBOX_SLICE)


# -- typed options --------------------------------------------------------------------------------


def test_defaults_are_flinks() -> None:
    config = Configuration()
    assert config.get(Options.BUFFER_TIMEOUT) == 100
    assert config.get(Options.SEGMENT_SIZE) == 32 * 1024
    assert config.get(Options.BUFFERS_PER_CHANNEL) == 2
    assert config.get(Options.FLOATING_BUFFERS_PER_GATE) == 8
    assert config.get(Options.MAX_BUFFERS_PER_CHANNEL) == 10
    assert config.get(Options.MAX_OVERDRAFT_BUFFERS_PER_GATE) == 5
    assert config.get(Options.MAX_PARALLELISM) == 128
    assert config.get(Options.PARALLELISM) == 1
    assert config.get(Options.OPERATOR_CHAINING) is True
    assert config.get(Options.CHECKPOINT_MODE) == "EXACTLY_ONCE"
    assert config.get(Options.CHECKPOINT_TIMEOUT) == 600_000


def test_typed_values_are_parsed() -> None:
    config = Configuration(
        {
            "execution.buffer-timeout": "5 s",
            "taskmanager.memory.segment-size": "64kb",
            "parallelism.default": 4,
            "pipeline.operator-chaining.enabled": False,
            "execution.checkpointing.mode": "AT_LEAST_ONCE",
        }
    )
    assert config.get(Options.BUFFER_TIMEOUT) == 5_000
    assert config.get(Options.SEGMENT_SIZE) == 64 * 1024
    assert config.get(Options.PARALLELISM) == 4
    assert config.get(Options.OPERATOR_CHAINING) is False
    assert config.get(Options.CHECKPOINT_MODE) == "AT_LEAST_ONCE"


def test_set_with_an_option_round_trips() -> None:
    config = Configuration()
    config.set(Options.OPERATOR_CHAINING, False).set(Options.BUFFER_TIMEOUT, "1 min")
    config.set(Options.PARALLELISM, 3)
    assert config.get_string("pipeline.operator-chaining.enabled", "") == "false"
    assert config.get(Options.OPERATOR_CHAINING) is False
    assert config.get(Options.BUFFER_TIMEOUT) == 60_000
    assert config.get(Options.PARALLELISM) == 3


def test_deprecated_keys_are_read_when_the_new_key_is_absent() -> None:
    timeout = Configuration({"execution.buffer-timeout.interval": "20 ms"})
    assert timeout.get(Options.BUFFER_TIMEOUT) == 20
    chaining = Configuration({"pipeline.operator-chaining": "false"})
    assert chaining.get(Options.OPERATOR_CHAINING) is False
    directory = Configuration({"state.checkpoints.dir": "/tmp/cp"})
    assert directory.get(Options.CHECKPOINT_DIR) == "/tmp/cp"


def test_the_new_key_wins_over_a_deprecated_one() -> None:
    both = Configuration(
        {"execution.buffer-timeout.interval": "20 ms", "execution.buffer-timeout": "30 ms"}
    )
    assert both.get(Options.BUFFER_TIMEOUT) == 30


def test_bad_value_under_a_deprecated_key_names_that_key() -> None:
    config = Configuration({"pipeline.operator-chaining": "maybe"})
    with pytest.raises(ConfigurationError) as info:
        config.get(Options.OPERATOR_CHAINING)
    assert "'pipeline.operator-chaining'" in str(info.value)
    assert "'maybe'" in str(info.value)


@pytest.mark.parametrize(
    ("option", "raw", "problem"),
    [
        (Options.BUFFER_TIMEOUT, "soon", "cannot parse duration"),
        (Options.SEGMENT_SIZE, "big", "cannot parse memory size"),
        (Options.OPERATOR_CHAINING, "perhaps", "cannot parse boolean"),
        (Options.PARALLELISM, "four", "cannot parse integer"),
        (Options.PARALLELISM, "0", "must be > 0"),
        (Options.SEGMENT_SIZE, "0 kb", "must be > 0"),
        (Options.FLOATING_BUFFERS_PER_GATE, "-1", "must be >= 0"),
        (Options.WORKERS, "-2", "must be >= 0"),
        (Options.CHECKPOINT_MODE, "SOMETIMES", "must be one of EXACTLY_ONCE, AT_LEAST_ONCE"),
        (Options.TARGET, "moon", "must be one of"),
        (Options.RUNTIME_MODE, "streaming", "must be one of STREAMING"),
    ],
)
def test_bad_values_name_the_key_and_the_value(
    option: ConfigOption[Any], raw: str, problem: str
) -> None:
    config = Configuration({option.key: raw})
    with pytest.raises(ConfigurationError) as info:
        config.get(option)
    message = str(info.value)
    assert f"'{option.key}'" in message
    assert repr(raw) in message
    assert problem in message
    assert isinstance(info.value, UndertowError) and isinstance(info.value, ValueError)


def test_every_option_has_a_unique_key_and_a_valid_default() -> None:
    options = list(Options.all())
    assert len(options) > 20
    keys = [o.key for o in options] + [k for o in options for k in o.deprecated_keys]
    assert len(keys) == len(set(keys))
    for option in options:
        assert option.read({}) == option.default
        if option.check is not None:
            assert option.check(option.default) is None, option.key


# -- PyFlink accessors ----------------------------------------------------------------------------


def test_string_accessors_and_chaining() -> None:
    config = Configuration()
    assert config.set_string("a", "x") is config
    assert config.get_string("a", "d") == "x"
    assert config.get_string("missing", "d") == "d"
    config.set_string("flag", True)
    assert config.get_string("flag", "") == "true"


def test_integer_boolean_float_accessors() -> None:
    config = Configuration()
    config.set_integer("i", 42).set_boolean("b", True).set_float("f", 2.5)
    assert config.get_integer("i", 0) == 42
    assert config.get_boolean("b", False) is True
    assert config.get_float("f", 0.0) == 2.5
    assert config.to_dict() == {"i": "42", "b": "true", "f": "2.5"}
    assert config.get_integer("nope", 7) == 7
    assert config.get_boolean("nope", False) is False
    assert config.get_float("nope", 1.5) == 1.5


@pytest.mark.parametrize(
    ("getter", "problem"),
    [
        (lambda c: c.get_integer("k", 0), "cannot parse integer"),
        (lambda c: c.get_boolean("k", False), "cannot parse boolean"),
        (lambda c: c.get_float("k", 0.0), "cannot parse float"),
    ],
)
def test_accessors_name_the_key_and_value_of_a_bad_value(getter: Any, problem: str) -> None:
    config = Configuration({"k": "not-a-number"})
    with pytest.raises(ConfigurationError) as info:
        getter(config)
    assert "'k'" in str(info.value)
    assert "'not-a-number'" in str(info.value)
    assert problem in str(info.value)


def test_keys_contains_remove_and_copy() -> None:
    config = Configuration({"a": 1, "b": "2"})
    assert config.key_set() == config.keys() == {"a", "b"}
    assert config.contains_key("a") and not config.contains_key("c")
    copy = Configuration(config)
    assert copy == config and hash(copy) == hash(config)
    assert config.remove_config("a") is True
    assert config.remove_config("a") is False
    assert copy.contains_key("a"), "a copy is independent"
    assert copy != config
    assert copy != {"a": "1", "b": "2"}


def test_add_all_with_and_without_prefix() -> None:
    base = Configuration({"x": "1"})
    other = Configuration({"y": "2"})
    assert base.add_all(other) is base
    base.add_all({"z": 3}, prefix="p.")
    assert base.to_dict() == {"x": "1", "y": "2", "p.z": "3"}
    target: dict[str, Any] = {"keep": "me"}
    base.add_all_to_dict(target)
    assert target == {"keep": "me", "x": "1", "y": "2", "p.z": "3"}
    assert "x" in repr(base)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"execution.target": "local"}, "cores"),
        ({"execution.target": "local-threads"}, "cores"),
        ({"execution.target": "spark"}, "cores"),  # spark.master defaults to local[*]
        ({"execution.target": "spark", "spark.master": "local[3]"}, 3),
        ({"execution.target": "spark", "spark.master": "local"}, 1),
        ({"execution.target": "spark", "spark.master": "spark://host:7077"}, 1),
        ({"execution.target": "local", "parallelism.default": "5"}, 5),
    ],
)
def test_default_parallelism_is_the_machines_cores_for_a_job_on_one_machine(
    settings: dict[str, str], expected: int | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyFlink's local environment runs at the number of cores unless told otherwise."""
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    want = (os.cpu_count() or 1) if expected == "cores" else expected
    assert default_parallelism(Configuration(settings)) == want


def test_under_spark_submit_without_a_master_the_default_parallelism_is_flinks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "12345")
    assert default_parallelism(Configuration({"execution.target": "spark"})) == 1


def test_the_module_still_names_what_it_held_before_the_split() -> None:
    """``undertow.core.config`` was the one module of options; its names still import."""
    from undertow.core import config, config_option, option_text

    assert config.parse_duration_ms is option_text.parse_duration_ms
    assert config.format_map is option_text.format_map
    assert config.duration_option is config_option.duration_option
    assert config.ConfigOption is config_option.ConfigOption
    assert all(hasattr(config, name) for name in config.__all__)
