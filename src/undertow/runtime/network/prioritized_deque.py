"""A deque with a priority region at its head (Flink's ``PrioritizedDeque``).

A *priority* element goes after the priority elements already queued but before every normal
element, so it overtakes in-flight data while priority elements keep their own FIFO order.

Invariants:
  * iteration order is head to tail: every priority element, in insertion order, then every
    normal element, in insertion order (``prioritize`` moves an element to the end of the
    priority region);
  * ``num_priority_elements`` is the length of the priority region.

Threading: not thread-safe. The owner (a subpartition or an input channel) calls it from the
single event-loop thread of its worker; nothing here locks.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Generic, TypeVar

__all__ = ["PrioritizedDeque"]

T = TypeVar("T")


class PrioritizedDeque(Generic[T]):
    """A FIFO queue whose head holds a FIFO region of priority elements.

    ``poll`` and ``peek`` return ``None`` on an empty deque, as Flink's do; do not store
    ``None`` as an element.
    """

    __slots__ = ("_normal", "_priority")

    def __init__(self) -> None:
        self._priority: deque[T] = deque()
        self._normal: deque[T] = deque()

    # -- adding and removing at the ends --------------------------------------------------------

    def add(self, element: T, priority: bool = False) -> None:
        """Append ``element``: at the tail, or, if ``priority``, at the end of the priority region.

        O(1).
        """
        if priority:
            self._priority.append(element)
        else:
            self._normal.append(element)

    def poll(self) -> T | None:
        """Remove and return the head element, or ``None`` if the deque is empty. O(1)."""
        if self._priority:
            return self._priority.popleft()
        if self._normal:
            return self._normal.popleft()
        return None

    def peek(self) -> T | None:
        """The head element without removing it, or ``None`` if the deque is empty. O(1)."""
        if self._priority:
            return self._priority[0]
        if self._normal:
            return self._normal[0]
        return None

    def peek_last(self) -> T | None:
        """The tail element (the last normal one if any), or ``None`` if empty. O(1)."""
        if self._normal:
            return self._normal[-1]
        if self._priority:
            return self._priority[-1]
        return None

    # -- moving and removing in the middle ------------------------------------------------------

    def prioritize(self, target: T | Callable[[T], bool]) -> T | None:
        """Move an element from the normal region to the end of the priority region.

        ``target`` is either a predicate (anything callable) or an element. A predicate selects
        the first *normal* element it accepts; elements already in the priority region are not
        considered, so an announcement in the priority region never shadows the barrier it
        announces. An element is matched by identity (``is``), as in Flink; if it is already a
        priority element it stays where it is.

        Returns the element that is now in the priority region, or ``None`` if a predicate
        matched nothing. Raises ``ValueError`` if an element is not in the deque (Flink would
        add it; here that is treated as a caller error). Do not use the element form on a deque
        of callables. O(n).
        """
        if callable(target):
            for index, element in enumerate(self._normal):
                if target(element):
                    del self._normal[index]
                    self._priority.append(element)
                    return element
            return None
        wanted = target
        if any(element is wanted for element in self._priority):
            return wanted
        for index, element in enumerate(self._normal):
            if element is wanted:
                del self._normal[index]
                self._priority.append(element)
                return element
        raise ValueError(f"cannot prioritize {wanted!r}: it is not in the deque")

    def remove_if(self, predicate: Callable[[T], bool]) -> list[T]:
        """Remove every element ``predicate`` accepts; return them head to tail.

        ``predicate`` is called exactly once per element, head to tail. O(n).
        """
        removed: list[T] = []
        for region in (self._priority, self._normal):
            before = len(removed)
            kept: list[T] = []
            for element in region:
                (removed if predicate(element) else kept).append(element)
            if len(removed) != before:
                region.clear()
                region.extend(kept)
        return removed

    def clear(self) -> None:
        """Remove every element. O(n) (elements are released)."""
        self._priority.clear()
        self._normal.clear()

    # -- inspection -----------------------------------------------------------------------------

    @property
    def num_priority_elements(self) -> int:
        """How many elements the priority region at the head holds. O(1)."""
        return len(self._priority)

    def priority_elements(self) -> Iterator[T]:
        """Iterate the priority elements, head first."""
        return iter(self._priority)

    def normal_elements(self) -> Iterator[T]:
        """Iterate the non-priority elements, head first."""
        return iter(self._normal)

    def __len__(self) -> int:
        return len(self._priority) + len(self._normal)

    def __iter__(self) -> Iterator[T]:
        """Iterate head to tail: priority elements first, then normal ones."""
        return chain(self._priority, self._normal)

    def __repr__(self) -> str:
        return f"PrioritizedDeque(priority={list(self._priority)!r}, normal={list(self._normal)!r})"
