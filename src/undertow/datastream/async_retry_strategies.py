"""PyFlink's ``pyflink.datastream.async_retry_strategies`` (defined in
:mod:`undertow.api.async_function`)."""

from undertow.api.async_function import (
    NO_RETRY_STRATEGY,
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
    NoRetryStrategy,
    RetryPredicate,
)

__all__ = [
    "NO_RETRY_STRATEGY",
    "ExponentialBackoffDelayRetryStrategy",
    "FixedDelayRetryStrategy",
    "NoRetryStrategy",
    "RetryPredicate",
]
