"""``RestartStrategies`` (PyFlink's ``pyflink.common.restart_strategy``): the values, their
getters, and that ``set_restart_strategy`` configures the strategy the JobMaster builds."""

from __future__ import annotations

from datetime import timedelta

import pytest

from undertow.common import Configuration, ExecutionConfig, RestartStrategies
from undertow.common.restart_strategy import RestartStrategyConfiguration, from_configuration
from undertow.datastream import StreamExecutionEnvironment
from undertow.runtime.master.restart import (
    ExponentialDelayRestart,
    FailureRateRestart,
    FixedDelayRestart,
    GiveUp,
    NoRestart,
    Restart,
    restart_strategy,
)


def test_failure_rate_restart_takes_pyflinks_arguments_and_answers_its_getters() -> None:
    by_timedelta = RestartStrategies.failure_rate_restart(
        3, timedelta(minutes=5), timedelta(seconds=10)
    )
    by_millis = RestartStrategies.failure_rate_restart(3, 300_000, 10_000)

    assert by_timedelta == by_millis and hash(by_timedelta) == hash(by_millis)
    assert by_millis.get_max_failure_rate() == 3
    assert by_millis.get_failure_interval() == timedelta(minutes=5)
    assert by_millis.get_delay_between_attempts_interval() == timedelta(seconds=10)
    assert "maximum of 3 failures within interval 300000 ms" in by_millis.get_description()
    assert by_millis != RestartStrategies.failure_rate_restart(4, 300_000, 10_000)
    assert by_millis != RestartStrategies.fixed_delay_restart(3, 10_000)


def test_the_environment_configures_the_strategy_the_job_master_builds() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_restart_strategy(RestartStrategies.failure_rate_restart(2, timedelta(seconds=10), 50))

    strategy = restart_strategy(env.get_configuration())

    assert isinstance(strategy, FailureRateRestart)
    assert (strategy.window.rate.max_failures, strategy.window.rate.interval_ms) == (2, 10_000)
    decisions = [strategy.decide(t) for t in (0, 4_000, 9_000)]
    assert decisions[:2] == [Restart(50), Restart(50)] and isinstance(decisions[2], GiveUp)
    assert env.get_restart_strategy() == RestartStrategies.failure_rate_restart(2, 10_000, 50)


def test_every_strategy_round_trips_through_the_configuration() -> None:
    config = ExecutionConfig(Configuration({"execution.checkpointing.interval": "1 s"}))
    assert config.get_restart_strategy() == RestartStrategies.fall_back_restart()
    assert isinstance(restart_strategy(config._config), ExponentialDelayRestart)

    cases = [
        (RestartStrategies.no_restart(), NoRestart),
        (RestartStrategies.fixed_delay_restart(4, timedelta(milliseconds=250)), FixedDelayRestart),
        (RestartStrategies.failure_rate_restart(1, 60_000, 1_000), FailureRateRestart),
        (RestartStrategies.fall_back_restart(), ExponentialDelayRestart),  # the default again
    ]
    for strategy, built in cases:
        config.set_restart_strategy(strategy)
        assert config.get_restart_strategy() == strategy
        assert isinstance(restart_strategy(config._config), built), strategy
    fixed = RestartStrategies.fixed_delay_restart(4, timedelta(milliseconds=250))
    assert (fixed.get_restart_attempts(), fixed.get_delay_between_attempts_interval()) == (
        4, timedelta(milliseconds=250)
    )  # fmt: skip


def test_a_configured_type_without_a_pyflink_class_is_named() -> None:
    config = Configuration({"restart-strategy.type": "exponential-delay"})
    strategy = from_configuration(config)
    assert type(strategy) is RestartStrategyConfiguration
    assert strategy.get_description() == "restart-strategy.type: exponential-delay"


@pytest.mark.parametrize("bad", ["10 s", 1.5, None, True])
def test_an_interval_that_is_neither_millis_nor_timedelta_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="'failure_interval' only supports integer"):
        RestartStrategies.failure_rate_restart(1, bad, 1000)
    with pytest.raises(TypeError, match="'delay_between_attempts_interval'"):
        RestartStrategies.fixed_delay_restart(1, bad)
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(TypeError, match="expected a RestartStrategyConfiguration"):
        env.set_restart_strategy("failure-rate")  # type: ignore[arg-type]
