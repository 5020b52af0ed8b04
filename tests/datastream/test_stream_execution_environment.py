"""What the environment asks of what it is given (:mod:`undertow.datastream.
stream_execution_environment`): a source and a collection's type by their capabilities
(``SourceLike``, ``ConformingType``), not by base class; a bad one refused naming the value."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.common import Types
from undertow.connectors.source import Boundedness
from undertow.core.config import Options
from undertow.core.errors import GraphBuildError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.collection import CollectionSource
from undertow.datastream.execution_mode import RuntimeExecutionMode


class ShapedLikeASource:
    """Not a ``Source`` subclass: it hands its work to a collection source."""

    def __init__(self, boundedness: Boundedness | None) -> None:
        self._inner = CollectionSource([1, 2, 3])
        self._boundedness = boundedness

    def get_boundedness(self) -> Boundedness | None:
        return self._boundedness

    def create_reader(self, context: Any) -> Any:
        return self._inner.create_reader(context)

    def create_enumerator(self, context: Any) -> Any:
        return self._inner.create_enumerator(context)


class NoReader:
    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_enumerator(self, context: Any) -> Any:
        raise AssertionError("never asked")


def _mode(*sources: Any) -> str:
    """The runtime mode AUTOMATIC resolves to for a job reading ``sources``."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)
    for i, source in enumerate(sources):
        env.from_source(source, None, f"s{i}").print()
    return str(env._effective_config().get(Options.RUNTIME_MODE))


def test_a_source_is_what_has_a_sources_methods_and_automatic_mode_reads_its_boundedness() -> None:
    assert _mode(ShapedLikeASource(Boundedness.BOUNDED)) == "BATCH"
    assert _mode(ShapedLikeASource(Boundedness.BOUNDED), CollectionSource([1])) == "BATCH"
    assert _mode(ShapedLikeASource(Boundedness.CONTINUOUS_UNBOUNDED)) == "STREAMING"
    assert _mode(ShapedLikeASource(None)) == "STREAMING"


def test_what_lacks_a_sources_methods_is_refused_naming_the_source_and_the_value() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    source = NoReader()
    with pytest.raises(
        GraphBuildError, match=r"from_source\('orders'\): <.*NoReader.*create_reader"
    ):
        env.from_source(source, None, "orders")


def test_a_collections_type_conforms_its_elements_when_it_can() -> None:
    class Doubling:  # not a TypeInformation: conform() and check() are what count
        def conform(self, value: Any) -> Any:
            return value * 2

        def check(self, value: Any) -> str | None:
            return None if value < 10 else f"{value} is too large"

    env = StreamExecutionEnvironment.get_execution_environment()
    elements = env.from_collection([1, 2], Doubling())._transformation.source.elements
    assert elements == [2, 4]
    with pytest.raises(GraphBuildError, match=r"element 1 \(10\) does not fit .*: 10 is too large"):
        env.from_collection([1, 5], Doubling())
    with pytest.raises(GraphBuildError, match=r"element 0 \('x'\) does not fit"):
        env.from_collection(["x"], Types.INT())
    row = Types.ROW_NAMED(["name", "v"], [Types.STRING(), Types.INT()])
    with pytest.raises(
        GraphBuildError, match=r"element 1 \(\('b', 2, 3\)\) does not fit .* has 2 fields, got 3"
    ):
        env.from_collection([("a", 1), ("b", 2, 3)], row)


@pytest.mark.parametrize("bad", [0, -1, "2", 2.0, True])
def test_a_parallelism_that_is_not_an_int_of_at_least_one_is_refused(bad: object) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(GraphBuildError, match=rf"parallelism must be an int >= 1, got {bad!r}"):
        env.set_parallelism(bad)  # type: ignore[arg-type]
