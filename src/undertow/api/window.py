"""Windows, window assigners, triggers and evictors (PyFlink's ``pyflink.datastream.window``).

A *window assigner* (:mod:`~undertow.api.windows.assigners`) puts each record into zero or more
windows (:mod:`~undertow.api.windows.windows`); the records of one key and one window are a
*pane*. A *trigger* (:mod:`~undertow.api.windows.triggers`) decides when a pane is evaluated
(``FIRE``) and/or discarded (``PURGE``); an optional *evictor*
(:mod:`~undertow.api.windows.evictors`) removes records from a pane just before and/or after
the window function runs. The window operator (:mod:`undertow.runtime.task.window_operator`)
drives all three with Flink's semantics. Assigners, triggers and evictors are configuration
objects, pickled with the job graph and called only on the subtask's loop thread.

This module re-exports the package ``undertow.api.windows`` under the one name that PyFlink
programs know (``from pyflink.datastream.window import ...``), so a port changes the package
name only; ``undertow.datastream.window`` re-exports the same names.
"""

# One list of names, the package's: ``from undertow.api.windows import *`` binds exactly its
# ``__all__``, which this module re-exports as its own.
from undertow.api.windows import *  # noqa: F403
from undertow.api.windows import __all__ as __all__
