"""DataGeneratorSource and from_collection's source: a split's state is its position; the
function or the collection comes from the job (JobBoundSplit)."""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle
import pytest
from tests.datastream.environments import threads_env

from undertow.connectors.source import InputStatus
from undertow.core.errors import JobExecutionError
from undertow.datastream.connectors.collection import CollectionSource
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.testing.source_reader import CollectingOutput, StandaloneReaderContext


def _read(
    source: DataGeneratorSource | CollectionSource, splits: list[Any], polls: int
) -> list[Any]:
    reader = source.create_reader(StandaloneReaderContext())
    reader.add_splits(splits)
    reader.notify_no_more_splits()
    out = CollectingOutput()
    for _ in range(polls):
        if reader.poll_next(out) is InputStatus.END_OF_INPUT:
            break
    return out.values


def test_a_restored_split_generates_with_the_function_of_the_new_job() -> None:
    """A checkpointed split holds no function: the job that restores it (here with a fixed
    generator) generates with its own, as a user who fixed a bug expects."""
    old = DataGeneratorSource(lambda i: ("old", i), count=5000)
    reader = old.create_reader(StandaloneReaderContext())
    reader.add_splits(old.create_enumerator(_EnumContext()).remaining)
    out = CollectingOutput()
    reader.poll_next(out)  # one batch of 4096
    assert out.values[-1] == ("old", 4095)
    state = cloudpickle.dumps(reader.snapshot_state(1))
    assert b"old" not in state  # no user code in the checkpoint

    new = DataGeneratorSource(lambda i: ("new", i), count=5000)
    restored = pickle.loads(state)
    assert _read(new, restored, polls=5) == [("new", i) for i in range(4096, 5000)]


def test_a_restored_split_resumes_at_its_position() -> None:
    source = DataGeneratorSource(lambda i: i * 10, count=100)
    splits = source.create_enumerator(_EnumContext()).remaining
    splits[0].position = 95
    restored = pickle.loads(cloudpickle.dumps(splits))
    assert _read(source, restored, polls=5) == [950, 960, 970, 980, 990]


def test_a_split_without_a_bound_function_is_refused() -> None:
    split = DataGeneratorSource(str, count=3).create_enumerator(_EnumContext()).remaining[0]
    with pytest.raises(RuntimeError, match="GeneratorSplit 0: no reader bound it"):
        split.next_batch(3)


def test_a_collection_checkpoint_holds_a_position_not_the_collection() -> None:
    """A checkpoint of ``from_collection``'s reader is a few bytes whatever the collection's
    size (it held a copy of the whole list, at every checkpoint)."""
    elements = [f"element {i:06d}" for i in range(100_000)]
    source = CollectionSource(elements)
    reader = source.create_reader(StandaloneReaderContext())
    reader.add_splits(source.create_enumerator(_EnumContext()).remaining)
    out = CollectingOutput()
    reader.poll_next(out)
    assert out.values == elements[:1024]
    state = cloudpickle.dumps(reader.snapshot_state(1))
    assert len(state) < 200, len(state)
    assert _read(source, pickle.loads(state), polls=200) == elements[1024:]


class _EnumContext:
    def current_parallelism(self) -> int:
        return 1


def test_a_negative_count_is_refused_naming_the_source() -> None:
    with pytest.raises(ValueError, match=r"^DataGeneratorSource: count must be >= 0, got -3"):
        DataGeneratorSource(lambda i: i, count=-3)


def test_a_generator_function_that_raises_names_the_index_it_was_making() -> None:
    """A job's failure says which index the function raised on (its message need not), as
    an operator's names its record."""

    def lookup(i: int) -> str:
        return {n: str(n) for n in range(5)}[i]  # KeyError: 5

    env = threads_env(parallelism=1)
    stream = env.from_source(DataGeneratorSource(lookup, count=10), None, "lookups")  # type: ignore[arg-type]
    named = r"KeyError: 5 \(generating the record of index 5\)"
    with pytest.raises(JobExecutionError, match=named), stream.execute_and_collect() as out:
        list(out)
