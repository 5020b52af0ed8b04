"""``Row`` and ``RowKind`` at PyFlink's ``pyflink.common.types`` path (defined in
:mod:`undertow.common.row`), so ``from pyflink.common.types import Row`` ports by its import."""

from undertow.common.row import Row, RowKind

__all__ = ["Row", "RowKind"]
