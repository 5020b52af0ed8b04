"""The heap backend's hot loops: a batch folded into value state with nothing to track.

Per record: the key's table (outside key context one lookup in
:attr:`~undertow.state.heap_states.StateTable.void_by_key`; in key context, which sets the key
group, the key -> offset cache and the table list), one table lookup, the fold, one store.
Called only with no snapshot pending and no incremental tracking (neither starts inside a
batch), so there is nothing to copy on touch nor to mark dirty.

Each variant (the fold in its record's key or not; a built-in aggregation of pairs applied
inline, :class:`~undertow.state.backend.PairAggregation`) is one loop compiled from the one
template below on first use, with no per-record branch or call it does not need (why:
docs/design.md, "What a record costs"). Only this module's constants reach the source.

Threading: the owning subtask's loop thread, as the backend. Invariant (as the backend's): a
key is stored in the table of its key group, in its hashable form.
"""

from __future__ import annotations

import functools
import linecache
import operator
import textwrap
from collections.abc import Callable
from typing import Any

from undertow.common.row import Row
from undertow.core.errors import note_record
from undertow.state.backend import PairAggregation
from undertow.state.heap_states import KeyContext
from undertow.state.key_groups import PLAIN_KEY_TYPES, groups_by_equality

#: Sets the backend's current key (computing and caching its offset, or raising StateError).
SetKey = Callable[[Any], None]
#: A generated loop: (offsets, float_offsets, tables, set_key, ctx, values, key_of, fold,
#: combine, slots) -> (new values, last key).
FoldLoop = Callable[..., tuple[list[Any], Any]]

#: Subscripts, not ``dict.get``: a hit (every record but a key's first) costs less than a
#: method call; the fold runs in the ``else`` of the table's ``try``, so a ``KeyError`` the
#: fold raises is the fold's, never taken for a key without a value. Only a fold called as a
#: function may return ``None`` (which clears the key's value); a pair combined inline never
#: does, so its store needs no check.
_TEMPLATE = """
def fold_loop(offsets, float_offsets, tables, set_key, ctx, values, key_of, fold, combine, slots):
    out = []
    append = out.append
    key = value = None
    try:
        for value in values:
            key = key_of(value)
{lookup}
            try:
                old = table[key]
            except KeyError:
                if value is None:  # no entry holds None
                    append(None)
                    continue
                new = value
            else:
{fold}
            table[key] = new
            append(new)
    except Exception as err:  # the record it raised on, named (free until something raises)
        note_record(err, value)
        raise
    return out, key
"""


def _lookup(by_value: str, by_set_key: str) -> str:
    """A key's lookup: ``by_value`` for a key that may be looked up by value (see
    :func:`~undertow.state.key_groups.groups_by_equality`: ``1.0 == 1``, in another key
    group; a ``Row`` key as its fields' tuple, as the backend's ``set_current_key`` takes
    it), :data:`_BY_FLOAT` for a float that is neither ±0.0 nor NaN (in a cache of floats
    only, the backend's), else ``by_set_key``. The rule is written out, int and str first,
    since a call per record cost more than its checks (a tuple's fields in a loop; a nested
    tuple calls it)."""
    value, set_key = textwrap.indent(by_value, "    "), textwrap.indent(by_set_key, "    ")
    return f"""key_type = type(key)
if key_type is int or key_type is str:
{value}
elif key_type is float and key and key == key:  # not ±0.0 (two keys), not a NaN (one key)
{textwrap.indent(_BY_FLOAT, "    ")}
else:
    if key_type is tuple or isinstance(key, row_type):  # a ROW key: its fields' tuple's rule
        plain = True
        for item in key:
            if type(item) not in plain_types and not groups_by_equality(item):
                plain = False
                break
    else:
        plain = key_type in plain_types
    if plain:
{textwrap.indent(value, "    ")}
    else:
{textwrap.indent(set_key, "    ")}
"""


#: A float key's table, by the backend's cache of floats' offsets (filled by ``set_key``): a
#: float equal to an int (``1.0 == 1``) has another key group, so floats have a cache apart.
_BY_FLOAT = """try:
    offset = float_offsets[key]
except KeyError:
    set_key(key)  # computes and caches the offset, or raises StateError
    offset = ctx.offset
table = tables[offset]"""
#: The key's table in key context: its key group's offset is set as the current one.
_LOOKUP_OFFSET = _lookup(
    """try:
    offset = offsets[key]
except KeyError:
    set_key(key)  # computes and caches the offset, or raises StateError
    offset = ctx.offset
table = tables[offset]""",
    """set_key(key)  # the cache may hold 1 but not 1.0, its equal: only set_key looks it up
offset, key = ctx.offset, ctx.key  # key: its hashable form
table = tables[offset]""",
)
#: The key's table without key context: one lookup of the key group's dict by key.
_LOOKUP_SLOT = _lookup(
    """try:
    table = slots[key]
except KeyError:
    set_key(key)  # computes the key group's offset, or raises StateError
    table = slots[key] = tables[ctx.offset]""",
    """set_key(key)  # never looked up by key (1.0 == 1 with another key group)
key = ctx.key  # its hashable form
table = tables[ctx.offset]
if groups_by_equality(key):  # a list's tuple
    slots[key] = table""",
)
#: A fold called as a function; its ``None`` clears the key's value.
_CALL = """
new = fold(old, value)
if new is None:
    table.pop(key, None)
    append(None)
    continue
"""
#: The new value of an old pair: field ``position`` combined, the other field the old one's.
_PAIR = {
    0: "(combine(old[0], value[0]), old[1])",
    1: "(old[0], combine(old[1], value[1]))",
}
_PAIR_ADD = {0: "(old[0] + value[0], old[1])", 1: "(old[0], old[1] + value[1])"}


@functools.cache
def _compiled(key_context: bool, position: int | None, inline_add: bool) -> FoldLoop:
    """The loop of one variant. ``position``: the pair field combined inline (``None``: every
    fold is a call); ``inline_add``: the combine is ``+`` (``operator.add``), written as such."""
    call = _CALL.strip("\n")
    if key_context:
        call = f"ctx.key, ctx.offset = key, offset\n{call}"
    if position is None:
        body = call
    else:
        new = (_PAIR_ADD if inline_add else _PAIR)[position]
        body = f"if type(old) is tuple and len(old) == 2:\n    new = {new}\nelse:\n"
        body += "\n".join("    " + line for line in call.splitlines())
    lookup = (_LOOKUP_OFFSET if key_context else _LOOKUP_SLOT).strip("\n")
    source = _TEMPLATE.format(
        lookup="\n".join(" " * 12 + line for line in lookup.splitlines()),
        fold="\n".join(" " * 16 + line for line in body.splitlines()),
    )
    filename = f"<heap fold loop {key_context} {position} {inline_add}>"
    # tracebacks through the loop show its lines, as for a loop written in a file
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # and groups_by_equality: which keys the loop may look up by value (1.0 == 1, other groups)
    namespace: dict[str, Any] = {
        "groups_by_equality": groups_by_equality,
        "plain_types": PLAIN_KEY_TYPES,
        "row_type": Row,
        "note_record": note_record,
    }
    exec(compile(source, filename, "exec"), namespace)
    loop: FoldLoop = namespace["fold_loop"]
    return loop


def fold_untracked(
    offsets: dict[Any, int],
    tables: list[dict[Any, Any]],
    set_key: SetKey,
    ctx: KeyContext,
    keys: list[Any],
    values: list[Any],
    fold: Callable[[Any, Any], Any],
    float_offsets: dict[float, int] | None = None,
) -> list[Any]:
    """Fold ``values`` (with their ``keys``) into ``tables``; ``fold`` runs in its record's
    key (it may read other keyed state). Returns the new values, in order: the loop of
    :func:`fold_untracked_by`, its keys taken from ``keys`` in step with ``values``."""
    next_key = iter(keys).__next__
    out, _ = fold_untracked_by(
        offsets, tables, set_key, ctx, values, lambda _value: next_key(), fold,
        key_context=True, float_offsets=float_offsets,
    )  # fmt: skip
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
    pair: PairAggregation | None = None,
    slots: dict[Any, dict[Any, Any]] | None = None,
    float_offsets: dict[float, int] | None = None,
) -> tuple[list[Any], Any]:
    """Fold ``values`` into ``tables``, each under its key ``key_of(value)`` taken inside the
    loop (no list of keys, no second pass). With ``key_context`` ``fold`` runs in its record's
    key (it may read other keyed state, as a user's ``reduce`` may); without, outside any key
    context: for folds that read no keyed state (the built-in aggregations), and the key's
    table is looked up in ``slots`` (key -> its key group's dict of ``tables``, filled here;
    the caller bounds it, and a fresh dict if ``None``). A float key (not ±0.0 nor NaN) is
    looked up in ``float_offsets``, the offsets ``set_key`` caches for floats (the backend's;
    ``None``: ``set_key`` once per key and batch). With ``pair``
    (``fold`` is that aggregation) an old value that is exactly a 2-tuple is combined in the
    loop, without a call of ``fold``. Returns the new values and the last key (in its hashable
    form; ``None`` for no values). Cost per batch: one cache lookup for the loop."""
    if slots is None:
        slots = {}
    floats = {} if float_offsets is None else float_offsets
    if pair is None:
        loop = _compiled(key_context, None, False)
        return loop(offsets, floats, tables, set_key, ctx, values, key_of, fold, None, slots)
    combine = pair.combine
    loop = _compiled(key_context, pair.position, combine is operator.add)
    return loop(offsets, floats, tables, set_key, ctx, values, key_of, fold, combine, slots)
