"""State descriptors and state interfaces (PyFlink's ``pyflink.datastream.state``).

``OperatorStateStore`` is PyFlink's interface of an operator's non-keyed state; undertow's
per-operator ``OperatorStateBackend`` (the store behind broadcast state) is registered as one.
"""

from abc import ABC, abstractmethod

from undertow.state.descriptors import (
    AggregatingState,
    AggregatingStateDescriptor,
    AppendingState,
    BroadcastState,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    MergingState,
    ReadOnlyBroadcastState,
    ReducingState,
    ReducingStateDescriptor,
    State,
    StateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)
from undertow.state.operator_state import OperatorStateBackend


class OperatorStateStore(ABC):
    """Access to an operator's non-keyed state; as in PyFlink, only broadcast state.

    One store per operator instance, used on its task thread only.
    """

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState:
        """The broadcast state named by ``state_descriptor`` (created empty on first use)."""


OperatorStateStore.register(OperatorStateBackend)

__all__ = [
    "AggregatingState",
    "AggregatingStateDescriptor",
    "AppendingState",
    "BroadcastState",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "MergingState",
    "OperatorStateStore",
    "ReadOnlyBroadcastState",
    "ReducingState",
    "ReducingStateDescriptor",
    "State",
    "StateDescriptor",
    "StateTtlConfig",
    "ValueState",
    "ValueStateDescriptor",
]
