"""Which enumerator and split assigner a file source uses
(:mod:`undertow.connectors.file.providers`): PyFlink's factories, and an unknown kind named."""

from __future__ import annotations

import pytest

from undertow.connectors.file.providers import FileEnumeratorProvider, FileSplitAssignerProvider


def test_the_factories_make_the_known_kinds() -> None:
    assert FileEnumeratorProvider.default_splittable_file_enumerator().kind == "splittable"
    assert FileEnumeratorProvider.default_non_splittable_file_enumerator() == (
        FileEnumeratorProvider()
    )
    assert FileSplitAssignerProvider.locality_aware_split_assigner() == FileSplitAssignerProvider()


def test_an_unknown_kind_is_named_with_the_factories_to_use() -> None:
    with pytest.raises(ValueError, match="unknown enumerator 'recursive'; use default_"):
        FileEnumeratorProvider("recursive")
    with pytest.raises(ValueError, match="unknown assigner 'random'; use locality_aware"):
        FileSplitAssignerProvider("random")
