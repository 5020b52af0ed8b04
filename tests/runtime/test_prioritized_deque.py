"""PrioritizedDeque: unit tests and a Hypothesis comparison with a list model."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.network.prioritized_deque import PrioritizedDeque


class Item:
    """An element compared by identity, like Flink's buffers."""

    def __init__(self, label: str, value: int = 0) -> None:
        self.label = label
        self.value = value

    def __repr__(self) -> str:
        return f"Item({self.label})"


def test_empty_deque() -> None:
    deque: PrioritizedDeque[int] = PrioritizedDeque()
    assert len(deque) == 0
    assert not deque
    assert deque.poll() is None
    assert deque.peek() is None
    assert deque.peek_last() is None
    assert deque.num_priority_elements == 0
    assert list(deque) == []


def test_priority_elements_go_after_priority_before_normal() -> None:
    deque: PrioritizedDeque[str] = PrioritizedDeque()
    deque.add("n1")
    deque.add("n2")
    deque.add("p1", priority=True)
    deque.add("n3")
    deque.add("p2", priority=True)
    assert list(deque) == ["p1", "p2", "n1", "n2", "n3"]
    assert deque.num_priority_elements == 2
    assert list(deque.normal_elements()) == ["n1", "n2", "n3"]
    assert list(deque.priority_elements()) == ["p1", "p2"]
    assert deque.peek() == "p1"
    assert deque.peek_last() == "n3"
    assert [deque.poll() for _ in range(6)] == ["p1", "p2", "n1", "n2", "n3", None]


def test_prioritize_element_by_identity() -> None:
    a, b, c = Item("a"), Item("b"), Item("c")
    deque: PrioritizedDeque[Item] = PrioritizedDeque()
    for item in (a, b, c):
        deque.add(item)
    p = Item("p")
    deque.add(p, priority=True)
    assert deque.prioritize(c) is c
    assert list(deque) == [p, c, a, b]
    assert deque.num_priority_elements == 2
    # Already a priority element: nothing moves.
    assert deque.prioritize(p) is p
    assert list(deque) == [p, c, a, b]
    with pytest.raises(ValueError, match="not in the deque"):
        deque.prioritize(Item("a"))  # equal label, different object


def test_prioritize_predicate_ignores_priority_region() -> None:
    deque: PrioritizedDeque[tuple[str, int]] = PrioritizedDeque()
    deque.add(("data", 1))
    deque.add(("barrier", 7))
    deque.add(("announcement", 7), priority=True)
    assert deque.prioritize(lambda e: e[1] == 7) == ("barrier", 7)
    assert list(deque) == [("announcement", 7), ("barrier", 7), ("data", 1)]
    assert deque.prioritize(lambda e: e[1] == 99) is None


def test_remove_if_and_clear() -> None:
    deque: PrioritizedDeque[int] = PrioritizedDeque()
    for value in range(6):
        deque.add(value, priority=value % 3 == 0)
    assert list(deque) == [0, 3, 1, 2, 4, 5]
    assert deque.remove_if(lambda v: v % 2 == 0) == [0, 2, 4]
    assert list(deque) == [3, 1, 5]
    assert deque.num_priority_elements == 1
    deque.clear()
    assert len(deque) == 0
    assert deque.num_priority_elements == 0


def test_remove_if_calls_predicate_once_per_element() -> None:
    deque: PrioritizedDeque[int] = PrioritizedDeque()
    for value in range(5):
        deque.add(value, priority=value == 4)
    seen: list[int] = []

    def predicate(value: int) -> bool:
        seen.append(value)
        return value == 1

    assert deque.remove_if(predicate) == [1]
    assert seen == [4, 0, 1, 2, 3]


# -- Hypothesis: compare with a list model ---------------------------------------------------------

Op = tuple[str, int]
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 1000)),
        st.tuples(st.just("add_priority"), st.integers(0, 1000)),
        st.tuples(st.just("poll"), st.just(0)),
        st.tuples(st.just("prioritize"), st.integers(0, 50)),
        st.tuples(st.just("remove_if"), st.integers(2, 5)),
    ),
    max_size=60,
)


def _divisible_by(divisor: int) -> Callable[[Item], bool]:
    return lambda item: item.value % divisor == 0


@settings(max_examples=300, deadline=None)
@given(ops)
def test_matches_list_model(operations: list[Op]) -> None:
    deque: PrioritizedDeque[Item] = PrioritizedDeque()
    model: list[Item] = []  # head to tail
    num_priority = 0
    counter = 0
    for op, arg in operations:
        if op in ("add", "add_priority"):
            counter += 1
            item = Item(f"{arg}/{counter}", arg)
            priority = op == "add_priority"
            deque.add(item, priority=priority)
            if priority:
                model.insert(num_priority, item)
                num_priority += 1
            else:
                model.append(item)
        elif op == "poll":
            expected = model.pop(0) if model else None
            if expected is not None and num_priority:
                num_priority -= 1
            assert deque.poll() is expected
        elif op == "prioritize":
            normal = model[num_priority:]
            if normal:
                target = normal[arg % len(normal)]
                assert deque.prioritize(target) is target
                model.remove(target)
                model.insert(num_priority, target)
                num_priority += 1
        else:
            expected_removed = [i for i in model if i.value % arg == 0]
            removed = deque.remove_if(_divisible_by(arg))
            assert removed == expected_removed
            num_priority -= sum(1 for i in model[:num_priority] if i in expected_removed)
            model = [i for i in model if i not in expected_removed]
        assert list(deque) == model
        assert len(deque) == len(model)
        assert deque.num_priority_elements == num_priority
        assert list(deque.normal_elements()) == model[num_priority:]
        assert deque.peek() is (model[0] if model else None)
        assert deque.peek_last() is (model[-1] if model else None)
