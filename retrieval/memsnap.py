"""A snapshot of the in-memory indexes, so a clean restart skips rebuilding them.

Rebuilding the keyword, entity, time and facet indexes from the graph and reading every vector
back from ChromaDB takes ~26 s at 100k items. :meth:`DualIndex.close` writes this file; the next
open uses it only when its watermark, ChromaDB's and the log head all agree, so a stale or
foreign file is ignored (and the slow, exact path runs instead). The file is a pickle of plain
containers and numpy arrays written atomically; like the rest of the data directory it is
trusted local state, never input from a client.
"""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path
from typing import Any

from graph.gcpause import gc_paused

from .vector import Watermark

logger = logging.getLogger(__name__)

#: Bumped whenever a pickled index changes what it holds or how it keys it (2: the statement
#: index and its word keys; 3: the keyword index's compact layout, typed posting arrays and
#: packed per-document term ids instead of dicts and Counters), so an older snapshot is rebuilt
#: from the graph, never trusted.
FORMAT = 3


def save(path: Path, mark: Watermark, state: dict[str, Any]) -> None:
    """Write ``state`` under ``mark`` atomically (temporary file, fsync, rename)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    # Owner-only, like the log (0600 whatever the umask; fchmod for a leftover tmp).
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        pickle.dump({"format": FORMAT, "mark": (mark.seq, mark.hash)}, handle)
        pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def load(path: Path, mark: Watermark) -> dict[str, Any] | None:
    """The state saved under exactly ``mark``, or ``None`` (missing, stale, damaged)."""
    try:
        with path.open("rb") as handle:
            header = pickle.load(handle)
            if header != {"format": FORMAT, "mark": (mark.seq, mark.hash)}:
                return None
            # Millions of containers, none in a cycle: with the collector on, each young
            # collection while they are created walks them again (1.4 s -> 0.9 s at 10k).
            with gc_paused():
                state = pickle.load(handle)
    except FileNotFoundError:
        return None
    except Exception:  # a damaged file only costs the slow path
        logger.warning("ignoring unreadable index snapshot %s", path, exc_info=True)
        return None
    return state if isinstance(state, dict) else None
