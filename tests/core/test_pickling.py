"""``core.pickling.dumps``: the classes of the job script (``__main__``) travel by value."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest

from undertow.core import pickling


class _Sensor:
    def __init__(self, vc: int) -> None:
        self.vc = vc


@pytest.fixture
def main_class(monkeypatch: pytest.MonkeyPatch) -> type:
    """``_Sensor`` as if the job script (``__main__``) defined it."""
    monkeypatch.setattr(_Sensor, "__module__", "__main__")
    monkeypatch.setattr(sys.modules["__main__"], "_Sensor", _Sensor, raising=False)
    return _Sensor


def test_plain_values_take_the_standard_pickler() -> None:
    value = [(1, "a"), {"k": 2.5}]
    assert pickling.dumps(value) == pickle.dumps(value, protocol=5)


def test_a_script_class_loads_where_main_is_not_the_script(
    main_class: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = pickling.dumps([main_class(3)])
    monkeypatch.delattr(sys.modules["__main__"], "_Sensor")  # a worker's __main__
    (restored,) = pickle.loads(data)
    assert restored.vc == 3 and type(restored).__name__ == "_Sensor"


def test_a_class_that_main_lacks_pickles_by_value(
    main_class: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a worker the script's classes were rebuilt from the job graph: __main__ lacks them,
    # so the standard pickler fails and cloudpickle writes them by value.
    monkeypatch.delattr(sys.modules["__main__"], "_Sensor")
    with pytest.raises(pickle.PicklingError):
        pickle.dumps(main_class(4))
    assert pickle.loads(pickling.dumps([main_class(4)]))[0].vc == 4


class _Refuses:
    """An object whose pickling raises on purpose (as the oracle's failing-snapshot trap)."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        raise RuntimeError("refused on purpose")


def test_an_error_raised_while_pickling_is_not_retried_away() -> None:
    """Only what the standard pickler cannot pickle falls back to cloudpickle; an error the
    object raises itself reaches the caller (retrying it hid the oracle's injected snapshot
    failure: the trap fires once)."""
    with pytest.raises(RuntimeError, match="refused on purpose"):
        pickling.dumps(_Refuses())


def test_record_batches_are_pickled_without_memo() -> None:
    """Each record written in full: no memo opcode per tuple, fewer bytes, the same values."""
    import pickletools

    batch = ([(i % 7, i) for i in range(200)], None)
    data = pickling.dumps_records(batch, 200)
    opcodes = {op.name for op, _, _ in pickletools.genops(data)}
    assert "MEMOIZE" not in opcodes and "BINPUT" not in opcodes
    assert len(data) < len(pickling.dumps(batch))
    assert pickle.loads(data) == batch


def test_a_small_batch_and_a_cyclic_record_take_dumps() -> None:
    assert pickling.dumps_records(([(1, 2)], None), 1) == pickling.dumps(([(1, 2)], None))
    cyclic: list[object] = []
    cyclic.append(cyclic)
    (restored, _) = pickle.loads(pickling.dumps_records(([cyclic] * 20, None), 20))
    assert restored[0][0] is restored[0] and restored[5] is restored[0]


def test_a_script_class_in_a_record_batch_travels_by_value(
    main_class: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = pickling.dumps_records([main_class(i) for i in range(20)], 20)
    monkeypatch.delattr(sys.modules["__main__"], "_Sensor")
    assert [s.vc for s in pickle.loads(data)] == list(range(20))


def test_functions_shipped_by_value_keep_the_file_of_their_code() -> None:
    """cloudpickle 3 writes ``<dynamic-code>`` as the file of code it ships by value; a
    worker's traceback then cannot name the job script. Nested code (a method of a class
    defined in a function) keeps its file too, and the function still runs."""

    def make() -> type:
        class Parse:
            def map(self, value: str) -> int:
                return int(value)

        return Parse

    restored = pickle.loads(pickling.dumps_functions(make()))
    assert restored.map.__code__.co_filename == __file__
    assert restored().map("12") == 12
    with pytest.raises(ValueError) as caught:
        restored().map("x")
    assert caught.traceback[-1].path == Path(__file__)
