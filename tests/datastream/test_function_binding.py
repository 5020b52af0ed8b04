"""Binding a user's function (:mod:`undertow.datastream.function_binding`): a function object
of the kind's shape gives its bound method and itself (to open and close), a plain callable
itself alone; anything else is refused naming where and the value."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.api.functions import KeySelector, MapFunction
from undertow.core.errors import GraphBuildError
from undertow.datastream.function_binding import (
    MAP,
    REDUCE,
    bind,
    bind_key_selector,
    described,
)


class Doubling(MapFunction):
    def map(self, value: Any) -> Any:
        return value * 2


class MapShaped:
    def map(self, value: Any) -> Any:
        return value + 1


class CallableWithAMapAttribute:
    """Has ``map``, not callable; is callable itself: bound as a plain callable."""

    map = 5

    def __call__(self, value: Any) -> Any:
        return -value


def test_a_function_object_gives_itself_and_its_method() -> None:
    function = Doubling()
    owner, call = bind(function, MAP, "map()")
    assert owner is function and call(4) == 8
    shaped = MapShaped()
    owner, call = bind(shaped, MAP, "map()")
    assert owner is shaped and call(4) == 5


def test_a_callable_is_bound_alone() -> None:
    assert bind(len, MAP, "map()") == (None, len)
    owner, call = bind(CallableWithAMapAttribute(), MAP, "map()")
    assert owner is None and call(3) == -3


def test_anything_else_is_refused_naming_where_and_the_value() -> None:
    with pytest.raises(
        GraphBuildError,
        match=r"reduce\(\): expected a ReduceFunction or a callable, got MapShaped <",
    ):
        bind(MapShaped(), REDUCE, "reduce()")
    assert described(5) == "int 5"


def test_a_key_selector_is_a_key_selector_or_a_callable() -> None:
    class ByFirst(KeySelector):
        def get_key(self, value: Any) -> Any:
            return value[0]

    assert bind_key_selector(ByFirst(), "key_by()")(("k", 1)) == "k"
    assert bind_key_selector(len, "key_by()") is len
    with pytest.raises(GraphBuildError, match=r"key_by\(\): key selector must be"):
        bind_key_selector(7, "key_by()")
    with pytest.raises(GraphBuildError) as info:
        bind_key_selector("user", "key_by()")  # Java's keyBy("field"), not PyFlink's
    assert "got str 'user'; to key by a field, pass a function, e.g. lambda r: r['user']" in str(
        info.value
    )
