"""Pickling of what leaves the process: records, control messages, state and checkpoints.

The standard pickler writes a class by reference (``__main__.WaterSensor``), and only the
driver's ``__main__`` is the job script: a worker's is ``undertow.deploy.worker_process`` or
``pyspark.daemon``. :func:`dumps` pickles with the standard pickler (one C call: the records'
hot path) and falls back to cloudpickle, which writes the classes and functions of ``__main__``
by value, when that fails or its bytes name ``__main__`` (one ``bytes`` search). Readers use
``pickle.loads``. Key bytes (key groups, RocksDB keys) do not come through here: they must be
equal for equal keys across runs. The story (savepoints, cost): docs/design.md, "Module notes".
:func:`dumps_records` is :func:`dumps` for batches of records: without the pickler's memo.
:func:`dumps_functions` pickles the job's functions and operators (all by value where
cloudpickle would), keeping the file name of every code object it writes.

Threading: pure functions, safe from any thread.
"""

from __future__ import annotations

import io
import pickle
import types
from collections import ChainMap
from typing import Any

import cloudpickle

__all__ = ["MAIN_MODULE", "dumps", "dumps_functions", "dumps_records"]

#: How a reference into ``__main__`` starts in a pickle (the module name as a string).
MAIN_MODULE = b"__main__"


def dumps(obj: Any) -> bytes:
    """``obj`` pickled (protocol 5) so that any process of the job can unpickle it.

    Raises what cloudpickle raises for an object it cannot pickle either (a lock, a socket,
    a generator); callers name the record, state or message in their error.
    """
    try:
        data = pickle.dumps(obj, protocol=5)
    except (pickle.PicklingError, AttributeError, TypeError):
        # what the standard pickler raises for what it cannot pickle by reference: a lambda, a
        # class defined in a function, a class rebuilt by value. Anything else (an error an
        # object's own __reduce__ raises on purpose, say) is the caller's to see, not retried.
        return bytes(cloudpickle.dumps(obj, protocol=5))
    if MAIN_MODULE in data:
        return bytes(cloudpickle.dumps(obj, protocol=5))
    return data


#: Below this many records a batch takes :func:`dumps` (a pickler object costs a call's worth).
RECORDS_WITHOUT_MEMO = 16


def dumps_records(obj: Any, records: int) -> bytes:
    """A batch of ``records`` records pickled as :func:`dumps` does, but without the pickler's
    memo (its ``fast`` mode): every object is written where it occurs, as Flink's serializers
    write each record in full. It halves the pickling of small records (no memo entry and no
    memo opcode per tuple; the bytes are ~13% fewer for ``(int, int)`` pairs) and loads with
    ``pickle.loads`` as before. An object that several records of the batch share arrives as
    equal copies (a batch's cut is arbitrary, so no reader can rely on identity across
    records); a cyclic record (which fast mode refuses) takes :func:`dumps`.
    """
    if records < RECORDS_WITHOUT_MEMO:
        return dumps(obj)
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5)
    pickler.fast = True
    try:
        pickler.dump(obj)
    except ValueError:  # "fast mode: can't pickle cyclic objects", or the object's own error
        return dumps(obj)
    except (pickle.PicklingError, AttributeError, TypeError):
        return bytes(cloudpickle.dumps(obj, protocol=5))  # as dumps: by value
    data = out.getvalue()
    if MAIN_MODULE in data:
        return bytes(cloudpickle.dumps(obj, protocol=5))
    return data


def _code_in_file(args: tuple[Any, ...], filename: str) -> types.CodeType:
    """A code object rebuilt from cloudpickle's constructor arguments, in ``filename``."""
    return types.CodeType(*args).replace(co_filename=filename)


def _reduce_code(code: types.CodeType) -> tuple[Any, ...]:
    """cloudpickle's reduction of ``code``, with the file name it replaces by
    ``<dynamic-code>`` (cloudpickle 3) put back when the code is rebuilt."""
    _, args = cloudpickle.Pickler.dispatch_table[types.CodeType](code)
    return _code_in_file, (args, code.co_filename)


class _FunctionPickler(cloudpickle.Pickler):
    """cloudpickle's pickler, except that code objects keep their file name, so that a
    worker's traceback through a lambda or a class of the job script names the script's file
    and (where the worker can read that file) shows the line that raised."""

    dispatch_table = ChainMap({types.CodeType: _reduce_code}, cloudpickle.Pickler.dispatch_table)


def dumps_functions(obj: Any) -> bytes:
    """``obj`` (a user function, operator, key selector, partitioner) pickled by cloudpickle
    (the job script's functions and classes by value) for every process of the job; readers
    use ``pickle.loads``. Raises what cloudpickle raises for what it cannot pickle."""
    out = io.BytesIO()
    _FunctionPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return out.getvalue()
