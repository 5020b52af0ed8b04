"""Record encoders and (de)serialization schemas, shaped like ``pyflink.common.serialization``.

* :class:`Encoder` - turns one record into the bytes a row-format file sink writes;
  ``Encoder.simple_string_encoder()`` writes ``str(value)`` and a newline, like Flink's
  ``SimpleStringEncoder`` writes ``toString()`` and ``'\\n'``.
* :class:`SerializationSchema` / :class:`DeserializationSchema` - record <-> message bytes for
  message-oriented connectors; :class:`SimpleStringSchema` is the ``str`` <-> bytes pair,
  :class:`RowFieldExtractorSchema` one bytes field of a row.

Charsets are Java or Python names (``"UTF-8"``, ``"ISO-8859-1"``, ``"utf-16"``); an unknown one
raises ``ValueError`` when the encoder or schema is built, not when the first record arrives.

Threading: encoders and schemas are immutable and stateless; one instance may be shared by all
subtasks (each gets its own unpickled copy anyway).
"""

from __future__ import annotations

import codecs
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from undertow.common.typeinfo import TypeInformation, Types

__all__ = [
    "ByteArraySchema",
    "DeserializationSchema",
    "Encoder",
    "RowFieldExtractorSchema",
    "SerializationSchema",
    "SimpleStringEncoder",
    "SimpleStringSchema",
]


def _codec_name(charset: str) -> str:
    try:
        return codecs.lookup(charset).name
    except (LookupError, TypeError) as err:
        raise ValueError(f"unknown charset {charset!r}") from err


@runtime_checkable
class SupportsEncode(Protocol):
    """What a row-format file sink calls per record: an :class:`Encoder`, or an object shaped
    like one (checked once, when the sink is built)."""

    def encode(self, value: Any) -> bytes: ...


class Encoder(ABC):
    """Writes one record as bytes (used by row-format file sinks)."""

    @abstractmethod
    def encode(self, value: Any) -> bytes:
        """The bytes to append to the file for ``value``."""

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> SimpleStringEncoder:
        """An encoder writing ``str(value)`` followed by ``'\\n'`` in ``charset_name``."""
        return SimpleStringEncoder(charset_name)


class SimpleStringEncoder(Encoder):
    """``str(value) + '\\n'`` encoded in ``charset_name`` (PyFlink 1.x's class name); with
    ``to_string``, that function's text instead of ``str`` (``sink_to`` gives a stream of a
    declared type Java's ``toString``, as Flink's encoder writes it)."""

    #: Also the value of an instance pickled before the attribute existed.
    _to_string: Callable[[Any], str] | None = None

    def __init__(
        self, charset_name: str = "UTF-8", to_string: Callable[[Any], str] | None = None
    ) -> None:
        self._charset = _codec_name(charset_name)
        self._to_string = to_string

    def with_to_string(self, to_string: Callable[[Any], str]) -> SimpleStringEncoder:
        return SimpleStringEncoder(self._charset, to_string)

    def encode(self, value: Any) -> bytes:
        text = str(value) if self._to_string is None else self._to_string(value)
        return (text + "\n").encode(self._charset)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SimpleStringEncoder)
            and other._charset == self._charset
            and other._to_string == self._to_string
        )

    def __hash__(self) -> int:
        return hash((SimpleStringEncoder, self._charset))

    def __repr__(self) -> str:
        return f"Encoder.simple_string_encoder({self._charset!r})"


class SerializationSchema(ABC):
    """Turns a record into a message's bytes."""

    @abstractmethod
    def serialize(self, element: Any) -> bytes: ...


class DeserializationSchema(ABC):
    """Turns a message's bytes into a record, and says which type it produces."""

    @abstractmethod
    def deserialize(self, message: bytes) -> Any: ...

    def deserialize_batch(self, messages: list[bytes]) -> list[Any]:
        """Every message of a batch, in order (an undertow addition: sources call it once per
        fetched batch; override it when one call per batch is cheaper). Raises what
        :meth:`deserialize` raises for any message; the caller then finds which one."""
        deserialize = self.deserialize
        return [deserialize(m) for m in messages]

    def is_end_of_stream(self, next_element: Any) -> bool:
        """Whether ``next_element`` ends the stream (never, by default)."""
        return False

    def get_produced_type(self) -> TypeInformation:
        return Types.PICKLED_BYTE_ARRAY()


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    """``str`` <-> bytes in ``charset`` (UTF-8 by default)."""

    def __init__(self, charset: str = "UTF-8") -> None:
        self._charset = _codec_name(charset)

    def serialize(self, element: Any) -> bytes:
        if not isinstance(element, str):
            raise TypeError(
                f"SimpleStringSchema serializes str, got {type(element).__name__} {element!r}"
            )
        return element.encode(self._charset)

    def deserialize(self, message: bytes | bytearray | memoryview) -> str:
        return bytes(message).decode(self._charset)

    def deserialize_batch(self, messages: list[bytes]) -> list[str]:
        charset = self._charset
        return [str(m, charset) for m in messages]

    def get_produced_type(self) -> TypeInformation:
        return Types.STRING()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SimpleStringSchema) and other._charset == self._charset

    def __hash__(self) -> int:
        return hash((SimpleStringSchema, self._charset))

    def __repr__(self) -> str:
        return f"SimpleStringSchema({self._charset!r})"


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """Message bytes as they are, both ways (PyFlink's ``ByteArraySchema``)."""

    def serialize(self, element: Any) -> bytes:
        if not isinstance(element, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"ByteArraySchema serializes bytes, got {type(element).__name__} {element!r}"
            )
        return bytes(element)

    def deserialize(self, message: bytes | bytearray | memoryview) -> bytes:
        return bytes(message)

    def get_produced_type(self) -> TypeInformation:
        return Types.PRIMITIVE_ARRAY(Types.BYTE())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByteArraySchema)

    def __hash__(self) -> int:
        return hash(ByteArraySchema)


class RowFieldExtractorSchema(SerializationSchema):
    """One field of a row, which must already be bytes, as the message (PyFlink 2.x's
    ``RowFieldExtractorSchema``: e.g. field 0 as a Kafka record's key, field 1 as its value).
    A ``None`` record or field is an empty message, as in Flink."""

    def __init__(self, field_index: int) -> None:
        if isinstance(field_index, bool) or not isinstance(field_index, int) or field_index < 0:
            raise ValueError(f"Field index must be non-negative, got: {field_index!r}")
        self._field_index = field_index

    def serialize(self, element: Any) -> bytes:
        if element is None:
            return b""
        if not isinstance(element, (tuple, list)):  # a Row is a tuple
            raise TypeError(
                f"RowFieldExtractorSchema({self._field_index}) serializes rows, got "
                f"{type(element).__name__} {element!r}"
            )
        if self._field_index >= len(element):
            raise ValueError(
                f"RowFieldExtractorSchema: cannot access field {self._field_index} in a row "
                f"with arity {len(element)}: {element!r}"
            )
        field = element[self._field_index]
        if field is None:
            return b""
        if not isinstance(field, (bytes, bytearray)):
            raise TypeError(
                f"RowFieldExtractorSchema: the field at index {self._field_index} must be "
                f"bytes, but was {type(field).__name__} {field!r}"
            )
        return bytes(field)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RowFieldExtractorSchema) and other._field_index == self._field_index
        )

    def __hash__(self) -> int:
        return hash((RowFieldExtractorSchema, self._field_index))

    def __repr__(self) -> str:
        return f"RowFieldExtractorSchema({self._field_index})"
