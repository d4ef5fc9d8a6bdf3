"""Compact attribute dicts for the graph's nodes and edges (key-sharing dicts).

Every node of the graph carries its ``Node.to_attrs()`` dict and every edge its
``Edge.to_attrs()`` dict: 100k nodes with ~15 fields each and ~450k directed edges. A plain
dict stores each key again in its own hash table (464 bytes for 15 keys, before the values).
CPython keeps the ``__dict__`` of instances of one class as *split* dicts: the keys live once,
in the class, and each dict holds only its values (224 bytes for the same 15 keys). They are
ordinary ``dict`` objects (``type(d) is dict``: orjson, ``marshal``, ``dict(d)``, ``{**d}``,
equality and iteration order behave exactly as for any dict), so every reader of
``G.nodes[n]`` keeps working and hashes, exports and answers stay byte for byte the same.

:func:`compact` builds one: an instance of a holder class per distinct key tuple (so each
class's shared keys are exactly one layout; there are a handful: the fields a node or edge has
set), its attributes set in the dict's order, and its ``__dict__`` returned (the holder itself
is dropped). It is purely a memory layout: when CPython cannot share the keys (more keys than a
class shares, a layout cache that is full, another Python) the result is simply a plain dict
equal to the input, and a dict later mutated in place stays correct (CPython turns it back into
a plain one). ``DECIGRAPH_COMPACT_MEMORY=0`` turns it off (plain dicts, for benchmarks that
measure before and after in the same run).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

#: Off with ``DECIGRAPH_COMPACT_MEMORY=0``: plain dicts everywhere (read once, at import).
ENABLED = os.environ.get("DECIGRAPH_COMPACT_MEMORY", "1") != "0"

#: CPython shares at most 30 keys per class (``SHARED_KEYS_MAX_SIZE``); past it, a plain dict.
MAX_SHARED_KEYS = 30
#: Distinct layouts kept (a node's layout is the set of its non-null fields, in field order;
#: real graphs have tens). Past it, new layouts get plain dicts.
MAX_LAYOUTS = 512

_holders: dict[tuple[str, ...], type] = {}


def _holder(keys: tuple[str, ...]) -> type | None:
    cls = _holders.get(keys)
    if cls is None:
        if len(_holders) >= MAX_LAYOUTS or len(keys) > MAX_SHARED_KEYS:
            return None
        if not all(isinstance(k, str) and k.isidentifier() and k[:2] != "__" for k in keys):
            return None  # names an attribute can have, and never a dunder (``__class__``...)
        cls = type("Attrs", (), {"__module__": __name__})
        _holders[keys] = cls
    return cls


def compact(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """A dict equal to ``attrs`` (same items, same order), stored with shared keys when it can.

    Examples
    --------
    >>> d = compact({"text": "Use PostgreSQL", "version": 1})
    >>> d == {"text": "Use PostgreSQL", "version": 1}, type(d) is dict, list(d)
    (True, True, ['text', 'version'])
    """
    if not ENABLED or not attrs:
        return attrs if type(attrs) is dict else dict(attrs)
    keys = tuple(attrs)
    cls = _holder(keys)
    if cls is None:
        return attrs if type(attrs) is dict else dict(attrs)
    holder = cls()
    for key, value in attrs.items():
        setattr(holder, key, value)
    values: dict[str, Any] = holder.__dict__
    return values
