"""Vectorised key groups equal the record path's, key for key (issue 31, step 3)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from undertow.state import key_groups as record_path
from undertow.state.key_groups import assign_to_key_group
from undertow.state.key_groups_arrow import DENSE_SPAN, KeyGroupLookup, key_groups

_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_TEXT = st.text(max_size=8)
_FLOAT = st.floats(allow_nan=False)  # -0.0 too: its group is its own, not 0.0's


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(_INT64, min_size=1, max_size=50), max_parallelism=st.integers(1, 32768))
def test_int_keys_match_the_record_path(keys: list[int], max_parallelism: int) -> None:
    batch = pa.record_batch({"k": pa.array(keys, type=pa.int64())})
    expected = [assign_to_key_group(k, max_parallelism) for k in keys]
    assert key_groups(batch, ["k"], max_parallelism).tolist() == expected


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(-1000, 1000), _TEXT, _FLOAT, st.booleans()), min_size=1, max_size=30
    ),
    columns=st.lists(st.sampled_from(["i", "s", "f", "b"]), min_size=1, max_size=3, unique=True),
    max_parallelism=st.sampled_from([1, 7, 128, 4096]),
)
def test_typed_and_compound_keys_match_the_record_path(
    rows: list[tuple[int, str, float, bool]], columns: list[str], max_parallelism: int
) -> None:
    batch = pa.record_batch({
        "i": pa.array([r[0] for r in rows], type=pa.int32()),
        "s": [r[1] for r in rows], "f": [r[2] for r in rows], "b": [r[3] for r in rows],
    })  # fmt: skip
    index = {"i": 0, "s": 1, "f": 2, "b": 3}
    if len(columns) == 1:
        keys = [r[index[columns[0]]] for r in rows]
    else:
        keys = [tuple(r[index[c]] for c in columns) for r in rows]
    expected = [assign_to_key_group(k, max_parallelism) for k in keys]
    assert key_groups(batch, columns, max_parallelism).tolist() == expected


@pytest.mark.parametrize("seen_before", [0.0, -0.0, True, (1.0,), 1])
def test_float_keys_have_the_groups_of_a_fresh_process_whatever_was_hashed_before(
    seen_before: object,
) -> None:
    """0.0 == -0.0 == 0 and 1.0 == True as dict keys, with other stable hashes: a column's
    groups (a record path hash per distinct value) are those of a process that hashed nothing
    before, not those of an equal key the process hashed first."""
    keys = [-0.0, 0.0, 1.0, 2.5]
    fresh = []
    for k in keys:
        record_path._cache.clear()
        record_path._float_cache.clear()
        fresh.append(assign_to_key_group(k, 4096))
    assign_to_key_group(seen_before, 4096)
    batch = pa.record_batch({"f": pa.array(keys, type=pa.float64())})
    assert key_groups(batch, ["f"], 4096).tolist() == fresh
    pairs = pa.record_batch({"f": pa.array(keys), "s": ["a"] * 4})
    expected = [assign_to_key_group((k, "a"), 4096) for k in keys]
    assert key_groups(pairs, ["f", "s"], 4096).tolist() == expected


def test_a_null_key_is_refused_naming_column_and_row() -> None:
    batch = pa.record_batch({"k": [1, None, 3]})
    with pytest.raises(ValueError, match=r"key column 'k' has 1 null\(s\), the first at row 1"):
        key_groups(batch, ["k"], 128)


# one run at load ~60 failed unrecorded and 7 reruns (3 beside 4 busy loops) passed; too_slow
# data generation under load is the suspect, not confirmed
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(
        st.tuples(
            st.one_of(st.integers(-2000, 2000), st.integers(-(2**40), 2**40)),
            st.lists(st.integers(-300, 300), max_size=40),
        ),
        min_size=1, max_size=6,
    ),
    kind=st.sampled_from([pa.int8(), pa.int32(), pa.int64()]),
    max_parallelism=st.sampled_from([1, 7, 128, 32768]),
)  # fmt: skip
def test_the_lookup_gives_the_hashed_groups_batch_after_batch(
    batches: list[tuple[int, list[int]]], kind: pa.DataType, max_parallelism: int
) -> None:
    """Batches whose values move around (a shift per batch: the table grows down and up, or
    the span gets too wide and the lookup steps aside for good) get the hashed groups."""
    lookup = KeyGroupLookup(max_parallelism)
    stepped_aside = False
    for shift, values in batches:
        if kind == pa.int8():
            keys = [max(-128, min(127, v)) for v in values]
        else:
            keys = [v + (shift if kind == pa.int64() else shift % 2**20) for v in values]
        column = pa.array(keys, type=kind)
        got = lookup.groups(column)
        if got is None:
            stepped_aside = True
            continue
        assert not stepped_aside, "a lookup that stepped aside came back"
        expected = key_groups(pa.record_batch({"k": column}), ["k"], max_parallelism)
        assert got.tolist() == expected.tolist()


def test_the_lookup_steps_aside_for_wide_keys_nulls_and_other_types() -> None:
    lookup = KeyGroupLookup(128)
    assert lookup.groups(pa.array(["a"])) is None
    assert lookup.groups(pa.array([1, None])) is None
    assert lookup.groups(pa.array([0, 10], type=pa.int64())) is not None
    assert lookup.groups(pa.array([0, DENSE_SPAN + 100])) is None  # wider than dense
    assert lookup.groups(pa.array([0, 10])) is None  # and for good


def test_the_lookup_serves_the_ends_of_int64() -> None:
    lookup = KeyGroupLookup(128)
    for keys in ([2**63 - 2, 2**63 - 1], [-(2**63), -(2**63) + 1]):
        column = pa.array(keys, type=pa.int64())
        got = lookup.groups(column)
        assert got is not None
        assert got.tolist() == key_groups(pa.record_batch({"k": column}), ["k"], 128).tolist()
        lookup = KeyGroupLookup(128)
