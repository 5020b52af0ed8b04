"""``OutputTag`` (PyFlink's ``pyflink.datastream.OutputTag``)."""

from undertow.api.output_tag import (
    OutputTag,
)

__all__ = [
    "OutputTag",
]
