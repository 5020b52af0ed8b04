"""Pickling of what leaves the process: records, control messages, state and checkpoints.

The standard pickler writes a class by reference (``__main__.WaterSensor``), and only the
driver's ``__main__`` is the job script: a worker's is ``undertow.deploy.worker_process`` or
``pyspark.daemon``. :func:`dumps` pickles with the standard pickler (one C call: the records'
hot path) and falls back to cloudpickle, which writes the classes and functions of ``__main__``
by value, when that fails or its bytes name ``__main__`` (one ``bytes`` search). Readers use
``pickle.loads``. Key bytes (key groups, RocksDB keys) do not come through here: they must be
equal for equal keys across runs. The story (savepoints, cost): docs/design.md, "Module notes".

Threading: pure functions, safe from any thread.
"""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle

__all__ = ["MAIN_MODULE", "dumps"]

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
