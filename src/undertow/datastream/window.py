"""Windows, assigners, triggers and evictors (PyFlink's ``pyflink.datastream.window``)."""

# One list of names, the package's: ``from undertow.api.windows import *`` binds exactly its
# ``__all__``, which this module re-exports as its own.
from undertow.api.windows import *  # noqa: F403
from undertow.api.windows import __all__ as __all__
