"""The heap backend's hot loops: a batch folded into value state with nothing to track.

Keyed ``reduce``/``sum`` spend most of a record's time here, so each loop does per record only
what the fold needs: one key -> key-group offset lookup (cached), one table lookup, the fold
and one store. The backend calls them only when no snapshot is pending and no incremental
tracking is on (neither can start inside a batch: a snapshot starts on the task thread,
between batches), so there is nothing to copy on touch nor to mark dirty.

Threading: the owning subtask's loop thread, as the backend. Invariant (as the backend's): a
key is stored in the table of its key group, in its hashable form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from undertow.state.heap_states import KeyContext

#: Sets the backend's current key (computing and caching its offset, or raising StateError).
SetKey = Callable[[Any], None]


def fold_untracked(
    offsets: dict[Any, int],
    tables: list[dict[Any, Any]],
    set_key: SetKey,
    ctx: KeyContext,
    keys: list[Any],
    values: list[Any],
    fold: Callable[[Any, Any], Any],
) -> list[Any]:
    """Fold ``values`` (with their ``keys``) into ``tables``; ``fold`` runs in its record's
    key (it may read other keyed state). Returns the new values, in order: the loop of
    :func:`fold_untracked_by`, its keys taken from ``keys`` in step with ``values``."""
    next_key = iter(keys).__next__
    out, _ = fold_untracked_by(
        offsets, tables, set_key, ctx, values, lambda _value: next_key(), fold, key_context=True
    )
    return out


def fold_untracked_by(
    offsets: dict[Any, int],
    tables: list[dict[Any, Any]],
    set_key: SetKey,
    ctx: KeyContext,
    values: list[Any],
    key_of: Callable[[Any], Any],
    fold: Callable[[Any, Any], Any],
    *,
    key_context: bool = False,
) -> tuple[list[Any], Any]:
    """Fold ``values`` into ``tables``, each under its key ``key_of(value)`` taken inside the
    loop (no list of keys, no second pass). With ``key_context`` ``fold`` runs in its record's
    key (it may read other keyed state, as a user's ``reduce`` may); without, outside any key
    context: for folds that read no keyed state (the built-in aggregations). Returns the new
    values and the last key (in its hashable form; ``None`` for no values)."""
    out: list[Any] = []
    append = out.append
    key: Any = None
    for value in values:
        key = key_of(value)
        try:
            offset = offsets.get(key)
        except TypeError:
            offset = None
        if offset is None:
            set_key(key)  # computes and caches the offset, or raises StateError
            offset, key = ctx.offset, ctx.key  # key: its hashable form
        table = tables[offset]
        old = table.get(key)
        if old is None:
            new = value
        else:
            if key_context:
                ctx.key, ctx.offset = key, offset
            new = fold(old, value)
        if new is None:
            table.pop(key, None)
        else:
            table[key] = new
        append(new)
    return out, key
