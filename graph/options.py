"""How a store is opened, and how opening went."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .eventlog import FsyncPolicy, TornTail


@dataclass(frozen=True)
class StoreOptions:
    """How a store is opened.

    ``snapshot_every``: events between automatic snapshots (0 turns them off; one is still
    written on close). ``fsync``: see :mod:`graph.eventlog`. ``use_snapshot=False`` replays the
    whole log (``decigraph rebuild``). ``event_store``: where the log lives (``None``: the
    file in the data directory; a ``postgresql://`` URL: the shared log, see
    :mod:`graph.eventstore.postgres`, with its ``commit_timeout`` and ``lock_timeout``).
    ``keep_checkpoints``: every snapshot is also kept (hard-linked, no copy) as a history
    checkpoint in ``<data-dir>/history/`` for ``asOf`` reads (:mod:`graph.timetravel`).
    """

    fsync: FsyncPolicy = "always"
    snapshot_every: int = 10_000
    read_only: bool = False
    use_snapshot: bool = True
    event_store: str | None = None
    commit_timeout: float = 10.0
    lock_timeout: float = 10.0
    keep_checkpoints: bool = True


@dataclass(frozen=True)
class OpenReport:
    """How the store reached its state at open: from a snapshot plus tail, or a full replay."""

    snapshot_seq: int | None
    replayed: int
    torn_tail: TornTail | None
    torn_saved_to: Path | None
