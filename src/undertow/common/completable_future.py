"""PyFlink's ``CompletableFuture`` (``pyflink.common.completable_future``): what ``JobClient``'s
methods return. PyFlink's wraps a Java future; undertow's futures are Python's own
``concurrent.futures.Future``, which has every method PyFlink's has (``cancel``,
``cancelled``, ``done``, ``result``, ``exception``, ``add_done_callback``), so this is that
class under PyFlink's name, for annotations and ``isinstance`` in ported code.
"""

from concurrent.futures import Future as CompletableFuture

__all__ = ["CompletableFuture"]
