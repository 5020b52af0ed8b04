"""Typed reads of one field of a decoded ``_metadata`` body, shared by both body formats.

:mod:`.metadata_json` (version 1) and :mod:`.metadata_msgpack` (version 2) decode a body into
plain values and then read each field through these: a value of the wrong type raises
:class:`TypeError` naming the field (``what``) and the value (cut at 80 characters), which
the envelope (:mod:`.metadata`) turns into a ``CorruptCheckpointError``. Containers are
checked in each format's module, whose messages name the format's own kinds (JSON object,
map). Pure functions, any thread.
"""

from __future__ import annotations


def string_field(value: object, what: str) -> str:
    """``value`` if it is a string."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {value!r:.80}")
    return value


def int_field(value: object, what: str) -> int:
    """``value`` if it is an integer (a boolean is not one)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer, got {value!r:.80}")
    return value


def bool_field(value: object, what: str) -> bool:
    """``value`` if it is a boolean."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a boolean, got {value!r:.80}")
    return value
