"""The oracle's records and the pure checks every stage applies to them (docs/testing.md).

An :class:`OracleRecord` is ``(magic, key, seq, payload)``. The payload is a deterministic
function of ``(key, seq, position)``: a 12-byte header ``(key, seq, length)`` (big endian,
unsigned 32-bit each) followed by the bytes ``(base + i) % 256`` for a ``base`` derived from
``(key, seq)``. So :func:`verify_record` detects, from the record alone, a wrong magic, a
payload that belongs to another record, a truncated or extended payload and flipped bytes.

Payload sizes are drawn deterministically from ``(key, seq, seed)`` out of a mix of
:class:`SizeClass` es. The default mix has small records, records several times smaller than a
32 KiB network buffer, and a few larger than one buffer, so that records span buffers.

Everything here is pure and cheap: making or checking a record copies its payload once.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

MAGIC = 0xABCDEAFC
"""The header every oracle record carries (Flink's ``UnalignedCheckpointRescaleITCase`` value)."""

PAYLOAD_HEADER = struct.Struct(">III")  # key, seq, total payload length
MIN_PAYLOAD = PAYLOAD_HEADER.size
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF

FOLD_SEED = 0xCBF29CE484222325
"""The fold of no inputs (the FNV-1a 64-bit offset basis)."""
_FOLD_PRIME = 0x100000001B3


@dataclass(frozen=True, slots=True)
class SizeClass:
    """Payload sizes drawn uniformly from ``[min_bytes, max_bytes]`` with relative ``weight``."""

    weight: float
    min_bytes: int
    max_bytes: int

    def __post_init__(self) -> None:
        if self.weight < 0 or not MIN_PAYLOAD <= self.min_bytes <= self.max_bytes:
            raise ValueError(
                f"SizeClass{(self.weight, self.min_bytes, self.max_bytes)}: need weight >= 0 "
                f"and {MIN_PAYLOAD} <= min_bytes <= max_bytes"
            )


DEFAULT_SIZES: tuple[SizeClass, ...] = (
    SizeClass(0.90, 16, 256),  # small
    SizeClass(0.08, 2 * 1024, 8 * 1024),  # several times smaller than a 32 KiB buffer
    SizeClass(0.02, 33 * 1024, 64 * 1024),  # larger than one buffer: spans buffers
)


class OracleRecord(NamedTuple):
    """One generated record: key ``key`` emits ``seq = 1, 2, ..., records_per_key`` in order."""

    magic: int
    key: int
    seq: int
    payload: bytes

    def __repr__(self) -> str:
        size = len(self.payload) if isinstance(self.payload, (bytes, bytearray)) else "?"
        return (
            f"OracleRecord(magic={self.magic:#x}, key={self.key}, seq={self.seq}, "
            f"payload=<{size} bytes>)"
        )


class TracedRecord(NamedTuple):
    """A record after a verifying map: ``corrupt_at`` names the stages that found it corrupt."""

    record: OracleRecord
    corrupt_at: tuple[str, ...]
    #: the epoch (:func:`epoch_of`) of the map that passed it on: tells records replayed from
    #: channel state (an earlier attempt's or job's) from live ones; 0: unknown
    epoch: int = 0


class OracleOutput(NamedTuple):
    """What the stateful operator emits per input: the record, where it was found corrupt,
    the key's number of inputs and fold *after* this record (its state), the subtask (of
    ``parallelism``, with ``max_parallelism`` key groups) and attempt that processed it,
    that subtask's running number of outputs in this attempt (its emission order), and a
    random ``run`` drawn when the subtask opened: attempt numbers start at 0 again in a job
    restored from a checkpoint or savepoint, so ``(subtask, attempt)`` alone does not tell
    that job's outputs from the first job's. ``epoch`` is the emitting attempt's
    (:func:`epoch_of`): an output of another epoch arrived through restored channel state."""

    record: OracleRecord
    corrupt_at: tuple[str, ...]
    inputs: int
    fold: int
    subtask: int
    parallelism: int
    max_parallelism: int
    attempt: int = 0
    emitted: int = 0
    run: int = 0
    epoch: int = 0


def epoch_of(job_tag: int, attempt: int) -> int:
    """One attempt of one job: ``job_tag`` is drawn once per job built (so a job restored from
    another's checkpoint differs from it although both number their attempts from 0)."""
    return (job_tag << 20) | (attempt & 0xFFFFF)


# --- deterministic functions of (key, seq) ------------------------------------------------------


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _mix(key: int, seq: int, seed: int) -> int:
    return _splitmix64(((key & _MASK32) << 32 | (seq & _MASK32)) ^ _splitmix64(seed))


def _base(key: int, seq: int) -> int:
    """First pattern byte of the payload of (key, seq); independent of the size mix and seed."""
    return _splitmix64((key & _MASK32) << 32 | (seq & _MASK32)) & 0xFF


_pattern = bytes(range(256)) * 2


def _pattern_bytes(length: int) -> bytes:
    """At least ``length + 256`` bytes of the repeating 0..255 pattern (grown on demand)."""
    global _pattern
    if len(_pattern) < length + 256:
        _pattern = bytes(range(256)) * (length // 256 + 2)
    return _pattern


def _check_sizes(sizes: Sequence[SizeClass]) -> tuple[SizeClass, ...]:
    sizes = tuple(sizes)
    if not sizes or sum(s.weight for s in sizes) <= 0:
        raise ValueError(f"sizes must hold at least one SizeClass with weight > 0, got {sizes!r}")
    return sizes


def payload_size(key: int, seq: int, sizes: Sequence[SizeClass] = DEFAULT_SIZES,
                 seed: int = 0) -> int:  # fmt: skip
    """The payload length of record (key, seq): a size class picked by weight, then a length
    in it, both from a hash of ``(key, seq, seed)``."""
    sizes = _check_sizes(sizes)
    h = _mix(key, seq, seed)
    total = sum(s.weight for s in sizes)
    point = ((h >> 40) / float(1 << 24)) * total
    chosen = sizes[-1]
    for size_class in sizes:
        if point < size_class.weight:
            chosen = size_class
            break
        point -= size_class.weight
    span = chosen.max_bytes - chosen.min_bytes + 1
    return chosen.min_bytes + (h & 0xFFFFFFFF) % span


def make_payload(key: int, seq: int, size: int) -> bytes:
    """The payload of record (key, seq) with ``size`` bytes (``size >= 12``)."""
    if size < MIN_PAYLOAD:
        raise ValueError(f"payload size {size} is below the {MIN_PAYLOAD}-byte header")
    body = size - MIN_PAYLOAD
    base = _base(key, seq)
    return PAYLOAD_HEADER.pack(key, seq, size) + _pattern_bytes(body)[base : base + body]


def make_record(key: int, seq: int, sizes: Sequence[SizeClass] = DEFAULT_SIZES,
                seed: int = 0) -> OracleRecord:  # fmt: skip
    """Record ``seq`` of ``key`` as the oracle source emits it."""
    return OracleRecord(
        MAGIC, key, seq, make_payload(key, seq, payload_size(key, seq, sizes, seed))
    )


def verify_record(record: Any) -> bool:
    """True iff ``record`` is an intact :class:`OracleRecord`: magic, key and seq are right, the
    payload header names this key, seq and the payload's length, and every payload byte is
    the one (key, seq, position) defines. Never raises."""
    try:
        magic, key, seq, payload = record
    except (TypeError, ValueError):
        return False
    if magic != MAGIC or type(key) is not int or type(seq) is not int:
        return False
    if type(payload) is not bytes or len(payload) < MIN_PAYLOAD:
        return False
    if not (0 <= key <= _MASK32 and 0 <= seq <= _MASK32):
        return False
    if PAYLOAD_HEADER.unpack_from(payload) != (key, seq, len(payload)):
        return False
    body = len(payload) - MIN_PAYLOAD
    base = _base(key, seq)
    expected = memoryview(_pattern_bytes(body))[base : base + body]
    return memoryview(payload)[MIN_PAYLOAD:] == expected


def fold_step(fold: int, seq: int) -> int:
    """The stateful operator's fold after one more input ``seq`` (a 64-bit hash chain)."""
    return ((fold ^ seq) * _FOLD_PRIME) & _MASK64


def expected_fold(seqs: Iterable[int]) -> int:
    """The fold of ``seqs`` in this order, starting from :data:`FOLD_SEED`."""
    fold = FOLD_SEED
    for seq in seqs:
        fold = fold_step(fold, seq)
    return fold


def unwrap(value: Any) -> tuple[Any, tuple[str, ...], OracleOutput | None]:
    """(record, stages that found it corrupt, stateful output or None) of any oracle value."""
    if type(value) is OracleOutput:
        return value.record, value.corrupt_at, value
    if type(value) is TracedRecord:
        return value.record, value.corrupt_at, None
    return value, (), None


def oracle_key(value: Any) -> int:
    """The key of a record or envelope; ``-1`` for a value too corrupt to have one.

    The key selector of every keyed exchange of the oracle pipeline (a module-level function,
    so jobs pickle it by reference)."""
    record = unwrap(value)[0]
    try:
        key = record[1]
    except (TypeError, IndexError):
        return -1
    return key if type(key) is int else -1
