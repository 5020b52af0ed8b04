"""Split modules keep their old import paths (issue 13, step 6).

``undertow.api.window`` and PyFlink's ``undertow.datastream.window`` re-export the package
``undertow.api.windows``; ``undertow.common.typeinfo`` re-exports its basic and composite
modules; ``undertow.datastream.data_stream`` re-exports the sink and two-input stream classes,
``undertow.core.config`` the option machinery, ``undertow.storage.checkpoint_storage`` the
layout's records (quality16's splits). Pickles name classes
by module, so objects pickled before a split must still load: the old names must resolve.
"""

from __future__ import annotations

import importlib
import pickle

import pytest

import undertow.api.window as api_window
import undertow.api.windows as windows
import undertow.datastream.window as datastream_window


def test_window_paths_export_the_same_objects() -> None:
    assert api_window.__all__ == windows.__all__ == datastream_window.__all__
    for name in windows.__all__:
        assert getattr(api_window, name) is getattr(windows, name), name
        assert getattr(datastream_window, name) is getattr(windows, name), name


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("undertow.api.window", "TimeWindow"),
        ("undertow.api.window", "CountWindow"),
        ("undertow.api.window", "GlobalWindow"),
        ("undertow.api.window", "TumblingEventTimeWindows"),
        ("undertow.api.window", "EventTimeTrigger"),
        ("undertow.api.window", "CountEvictor"),
        ("undertow.common.typeinfo", "BasicTypeInfo"),
        ("undertow.common.typeinfo", "RowTypeInfo"),
        ("undertow.common.typeinfo", "TupleTypeInfo"),
        ("undertow.datastream.data_stream", "DataStreamSink"),
        ("undertow.datastream.data_stream", "CloseableIterator"),
        ("undertow.datastream.data_stream", "ConnectedStreams"),
        ("undertow.datastream.data_stream", "BroadcastStream"),
        ("undertow.datastream.data_stream", "BroadcastConnectedStream"),
        ("undertow.core.config", "ConfigOption"),
        ("undertow.storage.checkpoint_storage", "CheckpointDirectory"),
        ("undertow.storage.checkpoint_storage", "CheckpointLocation"),
        ("undertow.runtime.task.operator", "ProcessingTimeService"),
    ],
)
def test_pickles_naming_the_old_module_still_load(module: str, name: str) -> None:
    # Protocol 0 GLOBAL opcode: what a pickle made before the split holds for the class.
    loaded = pickle.loads(f"c{module}\n{name}\n.".encode())
    assert loaded is getattr(importlib.import_module(module), name)
    assert loaded.__name__ == name


def test_merge_callback_is_still_reachable_from_its_assigner() -> None:
    assert api_window.MergingWindowAssigner.MergeCallback is windows.windows.MergeCallback
