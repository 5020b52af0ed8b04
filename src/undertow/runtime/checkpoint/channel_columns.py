"""A compact form of a packed channel array, for the ``_metadata`` file.

A merged channel-state handle's packed array (:mod:`.channel_state_handles`) spends
``3 + n`` ``uint32`` words on a channel with ``n`` chunks: ``a, b, n, len_1 .. len_n``. At
FLINK-33734's shape (P = 4800, all-to-all, one buffer per channel) that is 16 bytes x P² =
368 MB. Here the array is stored as four columns (``a``, ``b``, ``n`` per channel; the chunk
lengths, ``sum(n)`` of them), each in the cheapest of these forms::

    [0, v]          every value is v                  (one gate: a; one chunk each: n)
    [1, v]          v, v + 1, v + 2, ...              (all channels of a gate: b)
    [2|3|4, bytes]  uint8 | uint16 | uint32, little-endian   (chunk lengths)

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

_CONSTANT, _RUN, _U8, _U16, _U32 = 0, 1, 2, 3, 4
_WIDTHS = {_U8: "B", _U16: "H", _U32: "I"}
#: Most channels or chunks one handle may declare (each chunk holds at least one byte).
MAX_CHANNELS = 1 << 28


def pack(packed_channels: bytes) -> list[Any]:
    """The compact form of a well-formed packed channel array (as a handle holds it)."""
    words = _words(packed_channels)
    n = len(words)
    if n and n % 4 == 0 and words[2::4].count(1) == n // 4:
        # Every chunk count is 1, so the array is exactly n / 4 groups (a, b, 1, length).
        a, b, counts, lengths = words[0::4], words[1::4], words[2::4], words[3::4]
    else:  # several chunks on some channel: one walk over the channels
        a, b, counts, lengths = array("I"), array("I"), array("I"), array("I")
        i = 0
        while i < n:
            count = words[i + 2]
            a.append(words[i])
            b.append(words[i + 1])
            counts.append(count)
            lengths.extend(words[i + 3 : i + 3 + count])
            i += 3 + count
    return [len(a), _column(a), _column(b), _column(counts), _column(lengths)]


def unpack(form: object) -> bytes:
    """The packed channel array of a compact form (not yet checked as a handle would)."""
    if not isinstance(form, list) or len(form) != 5:
        raise ValueError(f"packed channels must be [k, a, b, n, lengths], got {form!r:.80}")
    k = form[0]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CHANNELS:
        raise ValueError(f"channel count must be 1..{MAX_CHANNELS}, got {k!r}")
    a, b, counts = (_uncolumn(form[i], k, name) for i, name in ((1, "a"), (2, "b"), (3, "n")))
    if counts.count(1) == k:  # one chunk per channel: interleave at C speed
        lengths = _uncolumn(form[4], k, "lengths")
        words = array("I", bytes(16 * k))
        words[0::4], words[1::4], words[2::4], words[3::4] = a, b, counts, lengths
    else:
        total = sum(counts)
        if total > MAX_CHANNELS:
            raise ValueError(f"chunk count must be at most {MAX_CHANNELS}, got {total}")
        lengths = _uncolumn(form[4], total, "lengths")
        words, at = array("I"), 0
        for channel in range(k):
            count = counts[channel]
            words.extend((a[channel], b[channel], count))
            words.extend(lengths[at : at + count])
            at += count
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
            f"column {name}: {len(value)} bytes for {k} values of {narrow.itemsize} bytes"
        )
    narrow.frombytes(value)
    if sys.byteorder != "little":
        narrow.byteswap()
    return narrow if typecode == "I" else array("I", narrow)
