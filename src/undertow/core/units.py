"""How sizes read in console lines, REST-less tools and the CLI: one formatting for all."""

from __future__ import annotations


def human_bytes(size: int) -> str:
    """``512 B``, ``1.2 MiB``: binary units, one decimal above bytes."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns
