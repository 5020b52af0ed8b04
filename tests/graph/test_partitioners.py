"""Stream partitioners: routing of whole batches and the channels each producer connects to."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypeVar, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.core.errors import KeySelectorError, KeyTypeError
from undertow.graph.partitioners import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    GlobalPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    Routed,
    ShufflePartitioner,
    StreamPartitioner,
    connected_consumers,
)
from undertow.state import key_groups
from undertow.state.key_groups import assign_to_key_group, subtask_for_key_group

VALUES = [f"v{i}" for i in range(23)]
STAMPS = [1000 + i for i in range(23)]


P = TypeVar("P", bound=StreamPartitioner)


def _ready(partitioner: P, channels: int) -> P:
    """A subtask's copy of the template, set up for ``channels`` channels."""
    p = cast(P, partitioner.copy())
    p.setup(channels)
    return p


def _all_partitioners() -> list[StreamPartitioner]:
    return [
        ForwardPartitioner(),
        GlobalPartitioner(),
        RebalancePartitioner(),
        RescalePartitioner(),
        ShufflePartitioner(),
        BroadcastPartitioner(),
        KeyGroupStreamPartitioner(lambda v: v, 128),
        CustomPartitionerWrapper(lambda key, n: len(key) % n, lambda v: v, "Map"),
    ]


def _check_aligned(routed: Routed, channels: int) -> None:
    """Every timestamp still belongs to its value (``STAMPS[i]`` belongs to ``VALUES[i]``)."""
    stamp_of = dict(zip(VALUES, STAMPS))
    for ch, (values, stamps) in routed.items():
        assert 0 <= ch < channels
        assert values, "empty batches are not routed"
        assert stamps is not None
        assert len(values) == len(stamps)
        assert [stamp_of[v] for v in values] == stamps


def _order_kept(routed: Routed) -> None:
    """Per channel, records keep the order they had in the batch."""
    for values, _ in routed.values():
        assert values == sorted(values, key=VALUES.index)


@pytest.mark.parametrize("partitioner", _all_partitioners(), ids=lambda p: p.kind)
@pytest.mark.parametrize("channels", [1, 3])
def test_route_without_timestamps(partitioner: StreamPartitioner, channels: int) -> None:
    if partitioner.kind in ("FORWARD", "GLOBAL") and channels > 1:
        channels = 1  # forward/global send to channel 0 only; the count does not matter
    p = _ready(partitioner, channels)
    routed = p.route(list(VALUES), None)
    for ch, (values, stamps) in routed.items():
        assert 0 <= ch < channels
        assert stamps is None
        assert values
    _order_kept(routed)
    delivered = Counter(v for values, _ in routed.values() for v in values)
    copies = channels if p.is_broadcast else 1
    assert delivered == Counter({v: copies for v in VALUES})


@pytest.mark.parametrize("partitioner", _all_partitioners(), ids=lambda p: p.kind)
@pytest.mark.parametrize("channels", [1, 4])
def test_route_with_timestamps_keeps_them_aligned(
    partitioner: StreamPartitioner, channels: int
) -> None:
    p = _ready(partitioner, channels)
    routed = p.route(list(VALUES), list(STAMPS))
    _check_aligned(routed, channels)
    _order_kept(routed)
    delivered = Counter(v for values, _ in routed.values() for v in values)
    copies = channels if p.is_broadcast else 1
    assert delivered == Counter({v: copies for v in VALUES})


@pytest.mark.parametrize("partitioner", _all_partitioners(), ids=lambda p: p.kind)
def test_empty_batch_routes_nowhere_or_empty(partitioner: StreamPartitioner) -> None:
    p = _ready(partitioner, 3)
    routed = p.route([], None)
    assert all(not values for values, _ in routed.values()) or routed == {}


def test_forward_and_global_send_everything_to_channel_zero() -> None:
    for cls in (ForwardPartitioner, GlobalPartitioner):
        p = _ready(cls(), 1)
        assert p.route(["a", "b"], [1, 2]) == {0: (["a", "b"], [1, 2])}
    g = _ready(GlobalPartitioner(), 5)
    assert list(g.route(["a", "b"], None)) == [0]


@pytest.mark.parametrize("channels", [2, 3, 7])
def test_rebalance_round_robin_continues_across_batches(channels: int) -> None:
    p = _ready(RebalancePartitioner(), channels)
    start = p._next
    sequence: list[tuple[int, int]] = []  # (channel, record) in emission order
    record = 0
    for size in (1, 5, 2, 0, 9, 3, 4):
        batch = list(range(record, record + size))
        stamps = [r * 10 for r in batch]
        routed = p.route(batch, stamps)
        for ch, (values, ts) in routed.items():
            assert ts == [v * 10 for v in values]
            sequence.extend((ch, v) for v in values)
        record += size
    channel_of = dict((v, ch) for ch, v in sequence)
    assert sorted(channel_of) == list(range(record))
    # record r of the whole stream goes to (start + r) % n, whatever the batch boundaries
    assert all(channel_of[r] == (start + r) % channels for r in range(record))


def test_rebalance_starts_at_a_random_channel_per_copy() -> None:
    starts = {_ready(RebalancePartitioner(), 8)._next for _ in range(200)}
    assert len(starts) > 1
    assert starts <= set(range(8))


def test_rebalance_single_channel_returns_the_batch() -> None:
    p = _ready(RebalancePartitioner(), 1)
    assert p.route([1, 2, 3], None) == {0: ([1, 2, 3], None)}


def test_shuffle_spreads_records() -> None:
    p = _ready(ShufflePartitioner(), 4)
    routed = p.route(list(range(400)), None)
    assert set(routed) == {0, 1, 2, 3}


@pytest.mark.parametrize(("max_parallelism", "channels"), [(128, 3), (128, 128), (7, 5), (10, 1)])
def test_key_group_partitioner_sends_each_key_to_its_owner(
    max_parallelism: int, channels: int
) -> None:
    keys: list[Any] = [*range(-50, 150), "a", "bb", ("t", 1), None, 2.5, b"raw"]
    records = [(k, i) for i, k in enumerate(keys)]
    p = _ready(KeyGroupStreamPartitioner(lambda r: r[0], max_parallelism), channels)
    routed = p.route(records, list(range(len(records))))
    seen = 0
    for ch, (values, stamps) in routed.items():
        assert stamps == [i for _, i in values]
        for key, _ in values:
            group = assign_to_key_group(key, max_parallelism)
            assert ch == subtask_for_key_group(max_parallelism, channels, group)
        seen += len(values)
    assert seen == len(records)


@pytest.mark.parametrize("timestamps", [None, [1, 2, 3]])
def test_a_key_selector_that_raises_names_key_by_and_the_record(timestamps: Any) -> None:
    """The failure is reported as the producing operator's; the message must say it was the
    key selector, on which record, with the selector's own error as the cause."""
    p = _ready(KeyGroupStreamPartitioner(lambda r: {"a": 1}[r[0]], 128), 2)
    with pytest.raises(
        KeySelectorError, match=r"key_by\(\) raised KeyError: 'b' on the record \('b', 2\)"
    ) as err:
        p.route([("a", 1), ("b", 2), ("a", 3)], timestamps)
    assert isinstance(err.value.__cause__, KeyError)
    unhashable = _ready(KeyGroupStreamPartitioner(lambda r: lambda: r, 128), 2)
    with pytest.raises(KeyTypeError, match="cannot be hashed to a key group"):
        unhashable.route([1], timestamps)  # the key's own error, not the selector's


def test_key_group_partitioner_is_stable_across_batches() -> None:
    p = _ready(KeyGroupStreamPartitioner(lambda v: v % 17, 128), 4)
    first = {v: ch for ch, (vs, _) in p.route(list(range(100)), None).items() for v in vs}
    second = {v: ch for ch, (vs, _) in p.route(list(range(100)), None).items() for v in vs}
    assert first == second


def test_custom_partitioner_gets_key_and_channel_count() -> None:
    calls: list[tuple[Any, int]] = []

    def part(key: Any, n: int) -> int:
        calls.append((key, n))
        return key % n

    p = _ready(CustomPartitionerWrapper(part, lambda v: v * 2, "Source"), 3)
    routed = p.route([0, 1, 2, 3], ["t0", "t1", "t2", "t3"])
    assert calls == [(0, 3), (2, 3), (4, 3), (6, 3)]
    assert routed == {0: ([0, 3], ["t0", "t3"]), 1: ([2], ["t2"]), 2: ([1], ["t1"])}


@pytest.mark.parametrize("bad", [3, -1, "0", None, 1.0])
def test_custom_partitioner_bad_return_names_operator_and_value(bad: Any) -> None:
    p = _ready(CustomPartitionerWrapper(lambda key, n: bad, lambda v: v, "My Map"), 3)
    with pytest.raises(ValueError, match="My Map") as info:
        p.route(["record-x"], None)
    message = str(info.value)
    assert repr(bad) in message
    assert "'record-x'" in message
    assert "[0, 3)" in message


def test_broadcast_sends_every_record_to_every_channel() -> None:
    p = _ready(BroadcastPartitioner(), 3)
    assert p.route(["a", "b"], [1, 2]) == {ch: (["a", "b"], [1, 2]) for ch in range(3)}


def test_flags_and_unaligned_support() -> None:
    by_kind = {p.kind: p for p in _all_partitioners()}
    assert by_kind["FORWARD"].is_pointwise and by_kind["RESCALE"].is_pointwise
    assert by_kind["BROADCAST"].is_broadcast
    unaligned = {kind for kind, p in by_kind.items() if p.supports_unaligned}
    assert unaligned == {"GLOBAL", "REBALANCE", "SHUFFLE", "HASH", "CUSTOM"}
    assert {repr(p) for p in by_kind.values()} == set(by_kind)


def test_copy_is_independent() -> None:
    template = RebalancePartitioner()
    a, b = _ready(template, 2), _ready(template, 5)
    assert (a.num_channels, b.num_channels, template.num_channels) == (2, 5, 0)


# -- connected consumers --------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(producers=st.integers(1, 40), consumers=st.integers(1, 40))
def test_rescale_connects_every_consumer(producers: int, consumers: int) -> None:
    p = RescalePartitioner()
    targets = [connected_consumers(p, i, producers, consumers) for i in range(producers)]
    covered = Counter(c for t in targets for c in t)
    assert set(covered) == set(range(consumers))
    for t in targets:
        assert t, "every producer has at least one channel"
        assert t == sorted(t)
        assert t == list(range(t[0], t[-1] + 1)), "a contiguous range"
    if producers <= consumers:
        # fan out: the producers split the consumers, each consumer exactly once
        assert all(n == 1 for n in covered.values())
    else:
        # fan in: each producer feeds exactly one consumer, consumers get (almost) equal shares
        assert all(len(t) == 1 for t in targets)
        assert max(covered.values()) - min(covered.values()) <= 1


@settings(max_examples=50, deadline=None)
@given(parallelism=st.integers(1, 64))
def test_forward_connects_i_to_i(parallelism: int) -> None:
    p = ForwardPartitioner()
    targets = [connected_consumers(p, i, parallelism, parallelism) for i in range(parallelism)]
    assert targets == [[i] for i in range(parallelism)]


@pytest.mark.parametrize(
    "partitioner",
    [
        RebalancePartitioner(),
        ShufflePartitioner(),
        BroadcastPartitioner(),
        GlobalPartitioner(),
        KeyGroupStreamPartitioner(lambda v: v, 16),
    ],
    ids=lambda p: p.kind,
)
def test_all_to_all_partitioners_connect_every_consumer(partitioner: StreamPartitioner) -> None:
    for producer in range(3):
        assert connected_consumers(partitioner, producer, 3, 5) == [0, 1, 2, 3, 4]


_KEYS = (
    st.integers(-(2**40), 2**40)
    | st.text(max_size=4)
    | st.tuples(st.integers(0, 9), st.text(max_size=2))
    | st.lists(st.integers(0, 9), max_size=2)  # unhashable: routed by value, never cached
    | st.none()
)


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(_KEYS, max_size=40), channels=st.integers(2, 5))
def test_key_group_routing_without_timestamps_equals_the_owner_of_each_key(
    keys: list[Any], channels: int
) -> None:
    """The one-pass route (no timestamps) sends each record to its key group's owner in batch
    order, exactly where the route with timestamps sends it; a second batch (cache warm) too."""
    records = [(k, i) for i, k in enumerate(keys)]
    p = _ready(KeyGroupStreamPartitioner(lambda r: r[0], 128), channels)
    for _ in range(2):
        plain = p.route(list(records), None)
        stamped = p.route(list(records), list(range(len(records))))
        assert {ch: vs for ch, (vs, _) in plain.items()} == {
            ch: vs for ch, (vs, _) in stamped.items()
        }
        assert all(stamps is None for _, stamps in plain.values())
        for ch, (values, _) in plain.items():
            assert values == sorted(values, key=lambda r: r[1])
            for key, _ in values:
                group = assign_to_key_group(key, 128)
                assert ch == subtask_for_key_group(128, channels, group)


@pytest.mark.parametrize("timestamps", [False, True])
def test_keys_equal_in_python_go_to_their_own_key_groups_whichever_came_first(
    timestamps: bool,
) -> None:
    """``1 == 1.0 == True`` and ``0.0 == -0.0`` as dict keys, but their stable hashes differ:
    the partitioner's key -> channel cache must not send ``1.0`` where ``1`` went before."""
    keys: list[Any] = [1, 1.0, True, (1,), (1.0,), (True,), 0.0, -0.0, 0, ("a", 2.0), ("a", 2)]
    p = _ready(KeyGroupStreamPartitioner(lambda r: r, 128), 128)  # a channel per key group
    for order in (keys, keys[::-1]):
        for key in order:  # one batch per key: each later key finds the earlier ones cached
            routed = p.route([key], [0] if timestamps else None)
            assert list(routed) == [assign_to_key_group(key, 128)], key


#: Keys a dict takes for one another (1 == 1.0 == True, 0 == 0.0 == -0.0 == False, and tuples
#: of them, nested too) while their stable hashes differ.
_EQUAL_KEYS = st.recursive(
    st.integers(-1, 2)
    | st.booleans()
    | st.sampled_from([0.0, -0.0, 1.0, 2.0, float("nan")])
    | st.sampled_from(["a", b"a", None]),
    lambda inner: st.tuples(inner) | st.tuples(inner, inner),
    max_leaves=4,
)


def _fresh_channel(key: Any) -> int:
    """The key group of ``key`` (a channel each) from emptied caches: a fresh process's."""
    key_groups._cache.clear()
    key_groups._float_cache.clear()
    return assign_to_key_group(key, 128)


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(_EQUAL_KEYS, max_size=12), timestamps=st.booleans())
def test_a_routed_key_goes_to_its_own_key_group_whatever_was_routed_before(
    keys: list[Any], timestamps: bool
) -> None:
    """Both route loops check a key before its cache lookup (int, str, a tuple's fields, a
    nested tuple's, a float not ±0.0) as :func:`groups_by_equality` does: a key routed after
    an equal one of other types ((1.0, (True,)) after (1, (1,))) goes where a fresh process
    sends it, in one batch or one a key, the caches cold or warm."""
    expected = [_fresh_channel(k) for k in keys]
    p = _ready(KeyGroupStreamPartitioner(lambda r: r[0], 128), 128)
    records = [(k, i) for i, k in enumerate(keys)]
    for batches in ([records], [[r] for r in records], [[r] for r in reversed(records)]):
        for batch in batches:
            routed = p.route(batch, [0] * len(batch) if timestamps else None)
            got = {i: ch for ch, (values, _) in routed.items() for _, i in values}
            assert got == {i: expected[i] for _, i in batch}, [keys[i] for _, i in batch]


def test_a_key_checking_selector_runs_with_one_channel_too() -> None:
    """With ``checks_keys`` (a declared ``key_type``) one channel still runs the selector on
    every record, so a key that does not fit fails there as with more channels."""
    seen: list[Any] = []
    plain = _ready(KeyGroupStreamPartitioner(seen.append, 128), 1)
    assert plain.route(["a", "b"], None) == {0: (["a", "b"], None)} and seen == []
    checked = _ready(KeyGroupStreamPartitioner(seen.append, 128, checks_keys=True), 1)
    assert checked.route(["a", "b"], [1, 2]) == {0: (["a", "b"], [1, 2])} and seen == ["a", "b"]


@pytest.mark.parametrize("timestamps", [None, [0] * 40])
def test_row_keys_route_as_their_tuples_each_computed_once(
    monkeypatch: pytest.MonkeyPatch, timestamps: Any
) -> None:
    """A ``key_type`` ROW hands the partitioner ``Row`` keys: each goes to its tuple's channel,
    its channel computed once and then found in the cache (it was computed on every record)."""
    from undertow.common.row import Row
    from undertow.graph import partitioners

    computed: list[Any] = []

    def counted(key: Any, maxp: int) -> int:
        computed.append(key)
        return assign_to_key_group(key, maxp)

    monkeypatch.setattr(partitioners, "assign_to_key_group", counted)
    rows = [Row(word=f"w{i % 4}", n=i % 4) for i in range(40)]
    routed = _ready(KeyGroupStreamPartitioner(lambda r: r, 128), 4).route(rows, timestamps)
    for channel, (values, _) in routed.items():
        for row in values:
            assert channel == subtask_for_key_group(128, 4, assign_to_key_group(tuple(row), 128))
    assert sorted(computed) == [(f"w{i}", i) for i in range(4)]
