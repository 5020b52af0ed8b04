"""``SlotSharingGroup`` and ``MemorySize`` (PyFlink: ``pyflink.datastream.slot_sharing_group``).

A slot sharing group names the operators that may share a task slot, with an optional resource
profile (CPU cores, heap, off-heap and managed memory, external resources). undertow records
the group name on each operator (``DataStream.slot_sharing_group``) and the profiles registered
with ``env.register_slot_sharing_group``; its workers run every subtask of a job in one pool of
slots, so the profiles are carried but do not size anything (docs/pyflink-compatibility.md).

Values are immutable; build them with ``SlotSharingGroup.builder(name)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["MemorySize", "SlotSharingGroup"]

_MEBI = 1024 * 1024


@dataclass(frozen=True, slots=True)
class MemorySize:
    """An amount of memory in bytes (Flink's ``MemorySize``)."""

    bytes: int

    def __post_init__(self) -> None:
        if self.bytes < 0:
            raise ValueError(f"memory size must be >= 0 bytes, got {self.bytes}")

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> MemorySize:
        return MemorySize(int(mebi_bytes) * _MEBI)

    def get_bytes(self) -> int:
        return self.bytes

    def get_kibi_bytes(self) -> int:
        return self.bytes >> 10

    def get_mebi_bytes(self) -> int:
        return self.bytes >> 20

    def get_gibi_bytes(self) -> int:
        return self.bytes >> 30

    def get_tebi_bytes(self) -> int:
        return self.bytes >> 40

    def __str__(self) -> str:
        return f"{self.bytes} bytes"


@dataclass(frozen=True, slots=True)
class SlotSharingGroup:
    """A named slot sharing group, with a resource profile or none (``cpu_cores`` None)."""

    name: str
    cpu_cores: float | None = None
    task_heap_memory: MemorySize | None = None
    task_off_heap_memory: MemorySize | None = None
    managed_memory: MemorySize | None = None
    external_resources: dict[str, float] = field(default_factory=dict, hash=False)

    def get_name(self) -> str:
        return self.name

    def get_cpu_cores(self) -> float | None:
        return self.cpu_cores

    def get_task_heap_memory(self) -> MemorySize | None:
        return self.task_heap_memory

    def get_task_off_heap_memory(self) -> MemorySize | None:
        return self.task_off_heap_memory

    def get_managed_memory(self) -> MemorySize | None:
        return self.managed_memory

    def get_external_resources(self) -> dict[str, float]:
        return dict(self.external_resources)

    def has_resource_profile(self) -> bool:
        return self.cpu_cores is not None

    @staticmethod
    def builder(name: str) -> SlotSharingGroup.Builder:
        return SlotSharingGroup.Builder(name)

    class Builder:
        """Collects a profile; as in Flink, a profile needs CPU cores and task heap memory
        once any resource is given."""

        def __init__(self, name: str) -> None:
            if not name:
                raise ValueError("a slot sharing group needs a non-empty name")
            self._name = name
            self._values: dict[str, Any] = {}
            self._external: dict[str, float] = {}

        def set_cpu_cores(self, cpu_cores: float) -> SlotSharingGroup.Builder:
            if cpu_cores <= 0:
                raise ValueError(f"slot sharing group '{self._name}': cpu cores must be > 0, "
                                 f"got {cpu_cores!r}")  # fmt: skip
            self._values["cpu_cores"] = float(cpu_cores)
            return self

        def set_task_heap_memory(self, task_heap_memory: MemorySize) -> SlotSharingGroup.Builder:
            self._values["task_heap_memory"] = task_heap_memory
            return self

        def set_task_heap_memory_mb(self, task_heap_mb: int) -> SlotSharingGroup.Builder:
            return self.set_task_heap_memory(MemorySize.of_mebi_bytes(task_heap_mb))

        def set_task_off_heap_memory(self, off_heap: MemorySize) -> SlotSharingGroup.Builder:
            self._values["task_off_heap_memory"] = off_heap
            return self

        def set_task_off_heap_memory_mb(self, off_heap_mb: int) -> SlotSharingGroup.Builder:
            return self.set_task_off_heap_memory(MemorySize.of_mebi_bytes(off_heap_mb))

        def set_managed_memory(self, managed_memory: MemorySize) -> SlotSharingGroup.Builder:
            self._values["managed_memory"] = managed_memory
            return self

        def set_managed_memory_mb(self, managed_memory_mb: int) -> SlotSharingGroup.Builder:
            return self.set_managed_memory(MemorySize.of_mebi_bytes(managed_memory_mb))

        def set_external_resource(self, name: str, value: float) -> SlotSharingGroup.Builder:
            self._external[name] = float(value)
            return self

        def build(self) -> SlotSharingGroup:
            values = dict(self._values)
            if values or self._external:
                missing = [k for k in ("cpu_cores", "task_heap_memory") if k not in values]
                if missing:
                    raise ValueError(
                        f"slot sharing group '{self._name}': a resource profile needs "
                        f"{' and '.join(missing)} (set_cpu_cores, set_task_heap_memory)"
                    )
                values.setdefault("task_off_heap_memory", MemorySize(0))
                values.setdefault("managed_memory", MemorySize(0))
            return SlotSharingGroup(self._name, external_resources=dict(self._external), **values)


def group_name(group: SlotSharingGroup | str) -> str:
    """The name a stream's ``slot_sharing_group(group)`` records: a :class:`SlotSharingGroup`'s
    name, or the name given as it is (PyFlink takes either)."""
    return group.get_name() if isinstance(group, SlotSharingGroup) else str(group)
