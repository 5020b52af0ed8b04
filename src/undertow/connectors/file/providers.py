"""PyFlink's ``FileEnumeratorProvider`` and ``FileSplitAssignerProvider``: FileSource hooks.

What each of PyFlink's factories means in undertow, whose enumerator (:mod:`.enumerator`)
lists files recursively, skips hidden ones (``.`` / ``_``), makes one split per file and hands
splits out in path order:

* ``default_non_splittable_file_enumerator()``: exactly that (the default).
* ``default_splittable_file_enumerator()``: the same. Flink splits only files of splittable
  formats; undertow's formats all read a file from its start, so it never splits one.
* ``locality_aware_split_assigner()``: the path-order assignment. Flink prefers splits stored
  on the requesting host; fsspec reports no block hosts, so there is nothing to prefer.

Immutable values, pickled with the source to the JobMaster.
"""

from __future__ import annotations

from dataclasses import dataclass

_ENUMERATORS = ("non_splittable", "splittable")
_ASSIGNERS = ("locality_aware",)


@dataclass(frozen=True, slots=True)
class FileEnumeratorProvider:
    """Which file enumerator a ``FileSource`` uses (module doc); made by the factories."""

    kind: str = "non_splittable"

    def __post_init__(self) -> None:
        if self.kind not in _ENUMERATORS:
            raise ValueError(
                f"FileEnumeratorProvider: unknown enumerator {self.kind!r}; use "
                f"default_splittable_file_enumerator() or default_non_splittable_file_enumerator()"
            )

    @staticmethod
    def default_splittable_file_enumerator() -> FileEnumeratorProvider:
        return FileEnumeratorProvider("splittable")

    @staticmethod
    def default_non_splittable_file_enumerator() -> FileEnumeratorProvider:
        return FileEnumeratorProvider("non_splittable")


@dataclass(frozen=True, slots=True)
class FileSplitAssignerProvider:
    """Which split assigner a ``FileSource`` uses (module doc); made by the factory."""

    kind: str = "locality_aware"

    def __post_init__(self) -> None:
        if self.kind not in _ASSIGNERS:
            raise ValueError(
                f"FileSplitAssignerProvider: unknown assigner {self.kind!r}; use "
                f"locality_aware_split_assigner()"
            )

    @staticmethod
    def locality_aware_split_assigner() -> FileSplitAssignerProvider:
        return FileSplitAssignerProvider("locality_aware")
