"""PyFlink 2.3's ``test_state_ttl_config.py`` scenarios, against undertow.

PyFlink's versions patch ``get_gateway`` to prove no JVM is touched; undertow has no JVM, so
the same assertions run plainly. Pickling stands in for PyFlink's protobuf round trip.
"""

from __future__ import annotations

import pickle

import pytest

from undertow.common.time import Duration, Time
from undertow.datastream.state import StateTtlConfig


def test_default_cleanup_without_gateway() -> None:
    config = StateTtlConfig.new_builder(Time.days(1)).build()
    strategy = config.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy()
    assert strategy is not None
    assert strategy.get_query_time_after_num_entries() == 1000


@pytest.mark.parametrize("arguments", [(), (None,), (0,), (False,), ("",)])
def test_explicit_cleanup_without_gateway(arguments: tuple[object, ...]) -> None:
    config = (
        StateTtlConfig.new_builder(Time.days(1))
        .cleanup_in_rocksdb_compact_filter(17, *arguments)  # type: ignore[arg-type]
        .build()
    )
    strategy = config.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy()
    assert strategy is not None
    assert strategy.get_query_time_after_num_entries() == 17


@pytest.mark.parametrize("explicit_cleanup", [False, True])
def test_cleanup_round_trip_without_gateway(explicit_cleanup: bool) -> None:
    builder = StateTtlConfig.new_builder(Time.days(1))
    if explicit_cleanup:
        builder.cleanup_in_rocksdb_compact_filter(17)
    restored = pickle.loads(pickle.dumps(builder.build()))
    strategy = restored.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy()
    assert restored.get_ttl() == Time.days(1)
    assert strategy.get_query_time_after_num_entries() == (17 if explicit_cleanup else 1000)


def test_default_duration_is_created_by_accessor() -> None:
    strategy = StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy(17)
    assert strategy.get_periodic_compaction_time() == Duration.of_days(30)


@pytest.mark.parametrize("milliseconds", [0, 3600000])
def test_explicit_duration_is_preserved(milliseconds: int) -> None:
    duration = Duration.of_millis(milliseconds)
    config = (
        StateTtlConfig.new_builder(Time.days(1))
        .cleanup_in_rocksdb_compact_filter(17, duration)
        .build()
    )
    strategy = config.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy()
    assert strategy is not None
    assert strategy.get_periodic_compaction_time() is duration


def test_cleanup_strategies_answer_as_pyflink() -> None:
    # Values measured on PyFlink 2.3 (not a scenario of its test file; it covers the builder).
    defaults = StateTtlConfig.new_builder(Time.days(1)).build()
    assert defaults.get_update_type() is StateTtlConfig.UpdateType.OnCreateAndWrite
    assert defaults.get_state_visibility() is StateTtlConfig.StateVisibility.NeverReturnExpired
    assert (
        defaults.get_ttl_time_characteristic()
        is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
    )
    strategies = defaults.get_cleanup_strategies()
    assert strategies.is_cleanup_in_background() and not strategies.in_full_snapshot()
    incremental = strategies.get_incremental_cleanup_strategy()
    assert incremental is not None
    assert (incremental.get_cleanup_size(), incremental.run_cleanup_for_every_record()) == (
        5,
        False,
    )
    off = StateTtlConfig.new_builder(Time.days(1)).disable_cleanup_in_background().build()
    assert not off.get_cleanup_strategies().is_cleanup_in_background()
    assert off.get_cleanup_strategies().get_incremental_cleanup_strategy() is None
    assert off.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy() is None
    full = (
        StateTtlConfig.new_builder(Time.days(1))
        .cleanup_full_snapshot()
        .cleanup_incrementally(10, True)
        .build()
        .get_cleanup_strategies()
    )
    assert full.in_full_snapshot()
    chosen = full.get_incremental_cleanup_strategy()
    assert chosen is not None and chosen.get_cleanup_size() == 10
    assert chosen.run_cleanup_for_every_record()
