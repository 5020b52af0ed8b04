"""Vectorised key groups equal the record path's, key for key (issue 31, step 3)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.state.key_groups import assign_to_key_group
from undertow.state.key_groups_arrow import key_groups

_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_TEXT = st.text(max_size=8)
_FLOAT = st.floats(allow_nan=False).map(lambda x: x + 0.0)  # no -0.0: 0.0 == -0.0 as dict keys


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


def test_a_null_key_is_refused_naming_column_and_row() -> None:
    batch = pa.record_batch({"k": [1, None, 3]})
    with pytest.raises(ValueError, match=r"key column 'k' has 1 null\(s\), the first at row 1"):
        key_groups(batch, ["k"], 128)
