"""A compact form of a packed channel array, for the ``_metadata`` file.

A merged channel-state handle's packed array (:mod:`.channel_state_handles`) spends four
``uint32`` words per channel with one chunk: ``a, b, 1, length``. At FLINK-33734's shape
(P = 4800, all-to-all) that is 16 bytes x P² = 368 MB. In the common case of one chunk per
channel the array is stored here as three columns (``a``, ``b``, ``length``), each in the
cheapest of these forms::

    [0, v]          every value is v                  (one gate: a)
    [1, v]          v, v + 1, v + 2, ...              (all channels of a gate: b)
    [2|3|4, bytes]  uint8 | uint16 | uint32, little-endian   (chunk lengths)

which stores 2 bytes per channel for buffers up to 64 KiB. Any other array (several chunks
on a channel) is stored as it is: ``[0, packed bytes]``. The compact form is
``[1, k, column a, column b, column length]`` with ``k`` channels.

Pure code, linear in the array and running at C speed (array slices, no loop per channel);
:func:`unpack` raises :class:`ValueError` naming what is malformed.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

_RAW, _COLUMNS = 0, 1
_CONSTANT, _RUN, _U8, _U16, _U32 = 0, 1, 2, 3, 4
_WIDTHS = {_U8: "B", _U16: "H", _U32: "I"}
#: Most channels one handle may declare (one chunk each, at least one byte per chunk).
MAX_CHANNELS = 1 << 28


def pack(packed_channels: bytes) -> list[Any]:
    """The compact form of a well-formed packed channel array (as a handle holds it)."""
    words = _words(packed_channels)
    n = len(words)
    if n and n % 4 == 0 and words[2::4].count(1) == n // 4:
        # Every chunk count is 1, so the array is exactly n / 4 groups (a, b, 1, length).
        return [_COLUMNS, n // 4, _column(words[0::4]), _column(words[1::4]), _column(words[3::4])]
    return [_RAW, bytes(packed_channels)]


def unpack(form: object) -> bytes:
    """The packed channel array of a compact form (not yet checked as a handle would)."""
    if not isinstance(form, list) or not form or form[0] not in (_RAW, _COLUMNS):
        raise ValueError(
            f"packed channels must be [0, bytes] or [1, k, a, b, lengths], got {form!r:.80}"
        )
    if form[0] == _RAW:
        if len(form) != 2 or not isinstance(form[1], bytes):
            raise ValueError(f"raw packed channels must be [0, bytes], got {form!r:.80}")
        return form[1]
    if len(form) != 5:
        raise ValueError(f"packed channel columns must have 5 fields, got {len(form)}")
    k = form[1]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CHANNELS:
        raise ValueError(f"channel count must be 1..{MAX_CHANNELS}, got {k!r}")
    words = array("I", bytes(16 * k))
    words[2::4] = array("I", [1]) * k
    for offset, name, column in ((0, "a", form[2]), (1, "b", form[3]), (3, "length", form[4])):
        words[offset::4] = _uncolumn(column, k, name)
    if sys.byteorder != "little":
        words.byteswap()
    return words.tobytes()


def _words(packed: bytes) -> array[int]:
    words = array("I")
    words.frombytes(packed)
    if sys.byteorder != "little":
        words.byteswap()
    return words


def _column(values: array[int]) -> list[Any]:
    first, k = values[0], len(values)
    if values.count(first) == k:
        return [_CONSTANT, first]
    if first + k - 1 <= 0xFFFFFFFF and values == array("I", range(first, first + k)):
        return [_RUN, first]
    top = max(values)
    code = _U8 if top <= 0xFF else _U16 if top <= 0xFFFF else _U32
    narrow = values if code == _U32 else array(_WIDTHS[code], values)
    if sys.byteorder != "little":
        narrow = array(narrow.typecode, narrow)
        narrow.byteswap()
    return [code, narrow.tobytes()]


def _uncolumn(column: object, k: int, name: str) -> array[int]:
    if not isinstance(column, list) or len(column) != 2:
        raise ValueError(f"column {name} must be [kind, value], got {column!r:.80}")
    kind, value = column
    if kind in (_CONSTANT, _RUN):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"column {name}: start must be a non-negative int, got {value!r}")
        last = value if kind == _CONSTANT else value + k - 1
        if last > 0xFFFFFFFF:
            raise ValueError(f"column {name}: value {last} exceeds uint32")
        return array("I", [value]) * k if kind == _CONSTANT else array("I", range(value, last + 1))
    typecode = _WIDTHS.get(kind) if isinstance(kind, int) and not isinstance(kind, bool) else None
    if typecode is None or not isinstance(value, bytes):
        raise ValueError(f"column {name} has unknown kind {kind!r} or no bytes")
    narrow = array(typecode)
    if len(value) != k * narrow.itemsize:
        raise ValueError(
            f"column {name}: {len(value)} bytes for {k} channels of {narrow.itemsize} bytes"
        )
    narrow.frombytes(value)
    if sys.byteorder != "little":
        narrow.byteswap()
    return narrow if typecode == "I" else array("I", narrow)
