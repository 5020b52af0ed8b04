"""A built-in aggregation of a field the records lack (``key_by(...).sum(5)`` on pairs,
``.max("nosuch")`` on rows): refused when the job is built if the stream's type is declared,
else the job fails at the first record, naming the operator, the aggregation, the field and
the record's shape (not a bare ``IndexError`` or ``KeyError``)."""

from __future__ import annotations

import pytest

from undertow.common import Row, Types
from undertow.core.errors import GraphBuildError, JobExecutionError

from .conftest import EnvFactory

PAIRS = [("a", 1), ("b", 2), ("c", 3)]  # every key once: nothing is ever folded


@pytest.mark.parametrize("target", ["local-threads", "local"])
def test_a_missing_field_fails_the_job_naming_operator_field_and_record(
    make_env: EnvFactory,
) -> None:
    env = make_env(parallelism=2)
    summed = env.from_collection(PAIRS).key_by(lambda r: r[0]).sum(5)
    expected = (r"operator 'Keyed Sum' .*KeyedStream.sum\(5\): no field 5 in a record of "
                r"tuple of 2 fields: \('[abc]', [123]\)")  # fmt: skip
    with pytest.raises(JobExecutionError, match=expected):
        summed.execute_and_collect(limit=10)

    env = make_env(parallelism=2)
    rows = env.from_collection([Row(sensor="s1", vc=1), Row(sensor="s1", vc=4)])
    peak = rows.key_by(lambda r: r.sensor).max("nosuch").name("peak")
    with pytest.raises(JobExecutionError, match=r"operator 'peak' .*max\('nosuch'\): no field "
                       r"'nosuch' in a record of Row of 2 fields \['sensor', 'vc'\]"):  # fmt: skip
        peak.execute_and_collect(limit=10)


@pytest.mark.parametrize("target", ["local-threads"])  # nothing runs
def test_a_field_the_declared_type_lacks_is_refused_when_the_job_is_built(
    make_env: EnvFactory,
) -> None:
    env = make_env(parallelism=2)
    pairs = env.from_collection(PAIRS, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    with pytest.raises(GraphBuildError, match=r"sum\(5\): the stream's records are tuples of 2 "):
        pairs.key_by(lambda r: r[0]).sum(5)
    named = Types.ROW_NAMED(["sensor", "vc"], [Types.STRING(), Types.INT()])
    rows = env.from_collection([Row(sensor="s1", vc=1)], type_info=named)
    with pytest.raises(GraphBuildError, match=r"max_by\('nosuch'\): .*\['sensor', 'vc'\]"):
        rows.key_by(lambda r: r.sensor).max_by("nosuch")
    assert rows.key_by(lambda r: r.sensor).max("vc") is not None  # a field it has
