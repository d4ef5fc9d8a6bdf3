"""``decigraph history ID``: every event that touched a decision; and ``export --as-of``.

Both open the store read-only (beside a running server too) without indexes or the model.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from service.composition import open_store
from service.settings import Settings
from service.usecases.history import StoreHistory, parse_point, resolve
from service.usecases.reads import export_document
from service.usecases.timeline import HistoryEntry, decision_history


def _line(entry: HistoryEntry) -> str:
    what = entry.action
    if entry.edge is not None:
        edge = entry.edge
        what += f" {edge.get('source')} -{edge.get('type')}-> {edge.get('target')}"
    changes = [
        f"{field}: {_short(c.get('before'))} -> {_short(c.get('after'))}"
        for field, c in entry.changes.items()
        if entry.action != "recorded"
    ]
    tail = f" ({'; '.join(changes)})" if changes else ""
    return f"{entry.seq:>8}  {entry.ts}  {entry.actor:<16} {what}{tail}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def run_history(args: argparse.Namespace, settings: Settings) -> int:
    with open_store(settings, read_only=True) as store:
        found = decision_history(StoreHistory.of(store), args.id)
    if args.json:
        rows = [
            {k: v for k, v in vars(e).items() if v is not None and v != {}} for e in found.entries
        ]
        print(json.dumps({"id": found.node_id, "exists": found.exists, "events": rows}, indent=2))
        return 0
    state = "exists" if found.exists else "forgotten"
    print(f"{found.node_id} ({state}): {len(found.entries)} events")
    for entry in found.entries:
        print(_line(entry))
    return 0


def run_export(args: argparse.Namespace, settings: Settings) -> dict[str, str]:
    """The export files, as of ``--as-of`` when given (the graph replayed to that point)."""
    with open_store(settings, read_only=True) as store:
        history = StoreHistory.of(store)
        if args.as_of is None:
            return export_document(history, args.format)
        at, point = resolve(history, parse_point(args.as_of), None)
        return export_document(history, args.format, at, None if point is None else point.wire())
