"""Transformations: what the DataStream API records, before any graph is built.

Each ``DataStream`` call adds one transformation. Physical transformations carry an operator
*template* (pickled into the job graph; every subtask runs its own copy). Virtual ones
(partition, union, side output) only shape edges and disappear in the stream graph.

Not thread-safe: built by the user's program thread before ``execute``.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field
from typing import Any

from undertow.graph.partitioners import StreamPartitioner

_ids = itertools.count(1)


class ChainingStrategy(enum.Enum):
    ALWAYS = "always"  # may chain to its predecessor and successors
    HEAD = "head"  # starts a new chain (start_new_chain)
    NEVER = "never"  # never chained (disable_chaining)


@dataclass(eq=False)
class Transformation:
    name: str
    parallelism: int | None = None
    max_parallelism: int | None = None
    uid: str | None = None
    slot_sharing_group: str = "default"
    chaining: ChainingStrategy = ChainingStrategy.ALWAYS
    buffer_timeout: int | None = None
    output_type: Any = None
    #: True if the user set the parallelism explicitly (otherwise the environment default).
    parallelism_set: bool = False
    #: ``set_description``: shown for the operator instead of its name in the execution plan's
    #: ``contents`` and the REST vertex's ``description``, as in Flink.
    description: str | None = None
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def inputs(self) -> list[Transformation]:
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id}, {self.name!r})"


@dataclass(eq=False)
class SourceTransformation(Transformation):
    #: A FLIP-27 ``Source`` (see :mod:`undertow.connectors.source`).
    source: Any = None
    watermark_strategy: Any = None
    bounded: bool = True


@dataclass(eq=False)
class OneInputTransformation(Transformation):
    input: Transformation | None = None
    operator: Any = None
    #: Set when the operator's input is keyed (state and timers are then available).
    key_selector: Any = None

    @property
    def inputs(self) -> list[Transformation]:
        return [self.input] if self.input is not None else []


@dataclass(eq=False)
class TwoInputTransformation(Transformation):
    input1: Transformation | None = None
    input2: Transformation | None = None
    operator: Any = None
    key_selector1: Any = None
    key_selector2: Any = None

    @property
    def inputs(self) -> list[Transformation]:
        return [t for t in (self.input1, self.input2) if t is not None]


@dataclass(eq=False)
class PartitionTransformation(Transformation):
    input: Transformation | None = None
    partitioner: StreamPartitioner | None = None

    @property
    def inputs(self) -> list[Transformation]:
        return [self.input] if self.input is not None else []


@dataclass(eq=False)
class UnionTransformation(Transformation):
    union_inputs: list[Transformation] = field(default_factory=list)

    @property
    def inputs(self) -> list[Transformation]:
        return list(self.union_inputs)


@dataclass(eq=False)
class SideOutputTransformation(Transformation):
    input: Transformation | None = None
    tag_id: str = ""

    @property
    def inputs(self) -> list[Transformation]:
        return [self.input] if self.input is not None else []


VIRTUAL = (PartitionTransformation, UnionTransformation, SideOutputTransformation)
