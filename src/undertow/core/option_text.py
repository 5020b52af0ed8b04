"""Option values written as text, the way Flink writes them: durations (``"100 ms"``,
``"10 min"``, plain milliseconds), memory sizes (``"32kb"``, ``"1 mb"``), booleans, numbers and
maps (``key:value,key2:value2``).

Pure functions; each raises :class:`~undertow.core.errors.ConfigurationError` naming the bad
text (the option reading it adds the key, :mod:`undertow.core.config_option`).
"""

from __future__ import annotations

import re

from undertow.core.errors import ConfigurationError

_DURATION_UNITS_MS = {
    "": 1.0, "ms": 1.0, "milli": 1.0, "millis": 1.0, "millisecond": 1.0, "milliseconds": 1.0,
    "s": 1000.0, "sec": 1000.0, "secs": 1000.0, "second": 1000.0, "seconds": 1000.0,
    "min": 60_000.0, "mins": 60_000.0, "minute": 60_000.0, "minutes": 60_000.0, "m": 60_000.0,
    "h": 3_600_000.0, "hour": 3_600_000.0, "hours": 3_600_000.0,
    "d": 86_400_000.0, "day": 86_400_000.0, "days": 86_400_000.0,
    "us": 0.001, "micro": 0.001, "micros": 0.001, "microsecond": 0.001, "microseconds": 0.001,
    "ns": 1e-6, "nano": 1e-6, "nanos": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
}  # fmt: skip
_MEMORY_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1024, "kb": 1024, "kibibytes": 1024,
    "m": 1024**2, "mb": 1024**2, "mebibytes": 1024**2,
    "g": 1024**3, "gb": 1024**3, "gibibytes": 1024**3,
    "t": 1024**4, "tb": 1024**4, "tebibytes": 1024**4,
}  # fmt: skip
_NUMBER_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_precise_duration_ms(text: str | int | float) -> float:
    """Parse ``"100 ms"``, ``"500 us"``, ``"1.5 s"`` or a number of milliseconds, keeping
    fractions of a millisecond."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    match = _NUMBER_UNIT.match(str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _DURATION_UNITS_MS:
        raise ConfigurationError(f"cannot parse duration {text!r} (examples: '100 ms', '10 min')")
    return float(match.group(1)) * _DURATION_UNITS_MS[unit]


def parse_duration_ms(text: str | int | float) -> int:
    """Parse ``"100 ms"``, ``"10 min"``, ``"5s"`` or a number of milliseconds: a whole number
    of milliseconds. A value with a fraction of a millisecond (``"0.5 ms"``, ``"1500 us"``) is
    refused rather than cut to a different duration."""
    ms = parse_precise_duration_ms(text)
    whole = round(ms)
    if abs(ms - whole) > 1e-9:
        raise ConfigurationError(
            f"duration {text!r} is not a whole number of milliseconds ({ms:g} ms)"
        )
    return whole


def parse_memory_size(text: str | int) -> int:
    """Parse ``"32kb"``, ``"1 mb"`` or a number of bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    match = _NUMBER_UNIT.match(str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _MEMORY_UNITS:
        raise ConfigurationError(f"cannot parse memory size {text!r} (examples: '32kb', '1 mb')")
    return int(float(match.group(1)) * _MEMORY_UNITS[unit])


def parse_bool(text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    lowered = str(text).strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ConfigurationError(f"cannot parse boolean {text!r}")


def parse_int(text: str | int) -> int:
    try:
        return int(text)
    except (TypeError, ValueError) as err:
        raise ConfigurationError(f"cannot parse integer {text!r}") from err


def parse_float(text: str | float) -> float:
    try:
        return float(text)
    except (TypeError, ValueError) as err:
        raise ConfigurationError(f"cannot parse float {text!r}") from err


def format_map(parameters: dict[str, str]) -> str:
    """Write a map in Flink's format (the inverse of :func:`parse_map`)."""

    def quote(text: str) -> str:
        if any(c in text for c in ",:'\"") or text != text.strip():
            return "'" + text.replace("'", "''") + "'"
        return text

    return ",".join(f"{quote(k)}:{quote(v)}" for k, v in parameters.items())


def parse_map(text: str) -> dict[str, str]:
    """Parse Flink's map format (``key:value,key2:value2``; single or double quotes around a
    part holding ``,`` ``:`` or a quote, quotes inside doubled; unquoted parts are stripped)."""
    entries: list[list[str]] = []
    fields: list[str] = []
    current: list[str] = []
    quoted = False
    quote: str | None = None

    def end_field() -> None:
        nonlocal current, quoted
        value = "".join(current)
        fields.append(value if quoted else value.strip())
        current, quoted = [], False

    i = 0
    while i < len(text):
        c = text[i]
        if quote is not None:
            if c == quote and text[i + 1 : i + 2] == quote:
                current.append(c)
                i += 1
            elif c == quote:
                quote = None
            else:
                current.append(c)
        elif c in "'\"":
            quote, quoted = c, True
            current = []  # whitespace before a quote is not part of the field
        elif c == ":" and not fields:  # the first colon ends the key
            end_field()
        elif c == ",":
            end_field()
            entries.append(fields)
            fields = []
        else:
            current.append(c)
        i += 1
    end_field()
    entries.append(fields)
    parameters: dict[str, str] = {}
    for entry in entries:
        if entry == [""]:
            continue
        if len(entry) != 2 or quote is not None:
            raise ConfigurationError(f"cannot parse {text!r} as a map (key:value,key2:value2)")
        parameters[entry[0]] = entry[1]
    return parameters
