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


class _Count:
    """How many times :func:`freeze_heap` moved the heap to the permanent generation (tests read
    it to check a path froze what it built, without timing a collection)."""

    freezes = 0


counts = _Count()


def freeze_heap() -> None:
    """Move every object alive now out of the collector's reach (``gc.freeze``).

    A loaded store holds millions of long-lived containers (the graph's attribute dicts, the
    indexes); every generation-2 collection walked all of them: 0.5-0.7 s pauses at 100k
    decisions, in the middle of whatever request allocated the object that triggered it.
    Frozen objects are still freed by reference counting; only a reference *cycle* among them
    stays until :func:`refreeze_heap`. Call it once what was loaded is in place (after the
    store and its indexes open, after the model loads). README "Start-up and GC pauses".
    """
    gc.freeze()
    counts.freezes += 1


def freeze_new() -> None:
    """Collect what was allocated since the last freeze, then freeze what survives.

    The collection walks only unfrozen objects (the permanent generation is never scanned), so
    it costs what is new; doing it first keeps garbage cycles created since then from being
    frozen in, where nothing would ever free them."""
    gc.collect()
    freeze_heap()


def refreeze_heap() -> None:
    """After a structure that was frozen was replaced (a store rebuilt from its log): unfreeze,
    collect what the old one left in cycles (one full collection, as the rebuild's own cost),
    freeze again."""
    gc.unfreeze()
    gc.collect()
    freeze_heap()
