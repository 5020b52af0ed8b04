"""PyFlink's ``pyflink.datastream.async_retry_predicates`` (defined in
:mod:`undertow.api.async_function`)."""

from undertow.api.async_function import (
    empty_result_predicate,
    exception_type_predicate,
    has_exception_predicate,
)

__all__ = ["empty_result_predicate", "exception_type_predicate", "has_exception_predicate"]
