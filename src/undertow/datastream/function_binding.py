"""Binding a user's function to what an operator calls, decided once when the job is built.

A function is a PyFlink function object (``MapFunction`` ...), an object of its shape (the
Protocols of :mod:`undertow.api.function_shapes`) or a plain callable; :func:`bind` returns
the object to open and close (``None`` for a callable) and the callable to apply, or raises
:class:`~undertow.core.errors.GraphBuildError` naming the method of the API and the value.
Key selectors are bound the same way (:func:`bind_key_selector`). Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from undertow.api.function_shapes import (
    FilterLike,
    FlatMapLike,
    InvokeLike,
    MapLike,
    ProcessElementLike,
    ReduceLike,
)
from undertow.api.functions import (
    FilterFunction,
    FlatMapFunction,
    KeySelector,
    MapFunction,
    ProcessFunction,
    ReduceFunction,
    SinkFunction,
)
from undertow.core.errors import GraphBuildError


@dataclass(frozen=True)
class FunctionKind:
    """One kind of user function: PyFlink's class (named in errors), the Protocol of its
    shape and how to take its method from an object of that shape."""

    base: type
    shape: type
    method: Callable[[Any], Any]


MAP = FunctionKind(MapFunction, MapLike, lambda f: f.map)
FLAT_MAP = FunctionKind(FlatMapFunction, FlatMapLike, lambda f: f.flat_map)
FILTER = FunctionKind(FilterFunction, FilterLike, lambda f: f.filter)
PROCESS = FunctionKind(ProcessFunction, ProcessElementLike, lambda f: f.process_element)
INVOKE = FunctionKind(SinkFunction, InvokeLike, lambda f: f.invoke)
REDUCE = FunctionKind(ReduceFunction, ReduceLike, lambda f: f.reduce)


def bind(func: Any, kind: FunctionKind, what: str) -> tuple[Any, Callable[..., Any]]:
    """(function object for open/close, callable to apply) for a function of ``kind``'s shape
    or a plain callable."""
    if isinstance(func, kind.shape):
        bound = kind.method(func)
        if callable(bound):
            return func, bound
    if callable(func):
        return None, func
    raise GraphBuildError(
        f"{what}: expected a {kind.base.__name__} or a callable, got {described(func)}"
    )


def described(value: Any) -> str:
    """A value as errors name it: its type and its repr."""
    return f"{type(value).__name__} {value!r}"


def bind_key_selector(key_selector: Any, what: str) -> Callable[[Any], Any]:
    """A ``KeySelector``'s ``get_key`` or a plain callable; raises naming ``what`` otherwise."""
    if isinstance(key_selector, KeySelector):
        return key_selector.get_key
    if callable(key_selector):
        return key_selector
    hint = ""
    if isinstance(key_selector, (str, int)):  # a field name or position, as Java's keyBy took
        hint = f"; to key by a field, pass a function, e.g. lambda r: r[{key_selector!r}]"
    raise GraphBuildError(
        f"{what}: key selector must be a KeySelector or a callable, got "
        f"{type(key_selector).__name__} {key_selector!r:.100}{hint}"
    )
