"""Pause Python's cyclic garbage collector while building large, acyclic structures."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Loading a graph allocates millions of dicts that hold no reference cycles; letting the
    collector scan them again and again as they are created makes loading several times slower.
    Reference counting still frees everything; the previous collector state is restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
