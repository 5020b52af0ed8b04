"""PyFlink's connector names with no job of their own: ``DeliveryGuarantee``, the FileSource
enumerator/assigner providers, and ``OperatorStateStore``."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DeliveryGuarantee
from undertow.datastream.connectors.base import DeliveryGuarantee as BaseDeliveryGuarantee
from undertow.datastream.connectors.file_system import (
    FileEnumeratorProvider,
    FileSource,
    FileSplitAssignerProvider,
    StreamFormat,
)
from undertow.datastream.state import MapStateDescriptor, OperatorStateStore
from undertow.state.operator_state import OperatorStateBackend


def test_delivery_guarantee_has_pyflinks_members() -> None:
    assert DeliveryGuarantee is BaseDeliveryGuarantee
    assert [g.name for g in DeliveryGuarantee] == ["EXACTLY_ONCE", "AT_LEAST_ONCE", "NONE"]


def test_file_source_builder_takes_pyflinks_providers(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n")
    (tmp_path / "b.txt").write_text("3\n")
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
        .set_file_enumerator(FileEnumeratorProvider.default_splittable_file_enumerator())
        .set_split_assigner(FileSplitAssignerProvider.locality_aware_split_assigner())
        .build()
    )
    assert source.file_enumerator == FileEnumeratorProvider("splittable")
    assert source.split_assigner.kind == "locality_aware"
    assert pickle.loads(pickle.dumps(source)).file_enumerator.kind == "splittable"
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
    assert sorted(stream.execute_and_collect()) == ["1", "2", "3"]


def test_file_source_defaults_and_bad_providers() -> None:
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/in")
    source = builder.build()
    assert source.file_enumerator == FileEnumeratorProvider.default_non_splittable_file_enumerator()
    with pytest.raises(TypeError, match="expected a FileEnumeratorProvider"):
        builder.set_file_enumerator("splittable")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a FileSplitAssignerProvider"):
        builder.set_split_assigner(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown enumerator 'blocks'"):
        FileEnumeratorProvider("blocks")


def test_operator_state_backend_is_an_operator_state_store() -> None:
    store = OperatorStateBackend("op")
    assert isinstance(store, OperatorStateStore)
    rules = store.get_broadcast_state(MapStateDescriptor("rules"))
    rules.put("a", 1)
    assert store.get_broadcast_state(MapStateDescriptor("rules")).get("a") == 1
