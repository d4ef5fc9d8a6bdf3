"""History methods: ``getDecisionHistory``, and the ``asOf``/``validAt`` plumbing every read
method that accepts them shares (:func:`at_of`, :func:`stamped`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from graph.model import MAX_SHORT
from graph.timeutil import format_ts
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases.history import At, Point, resolve
from service.usecases.timeline import HistoryEntry, decision_history

from .params import ID_ALIASES, Params, TimeParams, wire


def at_of(app: usecases.Decigraph, p: TimeParams) -> tuple[At, Point | None]:
    """Where a read looks, and the point it reports."""
    return resolve(app, p.as_of, p.valid_at)


def stamped(answer: Mapping[str, Any], p: TimeParams, point: Point | None) -> dict[str, Any]:
    """``answer`` with ``asOf`` (the resolved seq and its event's time) and ``validAt`` echoed,
    when the call asked for them."""
    out = dict(answer)
    if point is not None:
        out["asOf"] = point.wire()
    if p.valid_at is not None:
        out["validAt"] = format_ts(p.valid_at)
    return out


class HistoryParams(Params):
    model_config = wire(id=ID_ALIASES)

    id: str = Field(min_length=1, max_length=MAX_SHORT)


def entry_view(entry: HistoryEntry) -> dict[str, Any]:
    view: dict[str, Any] = {
        "seq": entry.seq,
        "eventId": entry.event_id,
        "ts": entry.ts,
        "actor": entry.actor,
        "op": entry.op,
        "action": entry.action,
        "changes": entry.changes,
    }
    for key in ("edge", "review", "note"):
        value = getattr(entry, key)
        if value is not None:
            view[key] = value
    return view


def register_history(registry: Registry, app: usecases.Decigraph) -> None:
    def history(p: HistoryParams, ctx: CallContext) -> Mapping[str, Any]:
        found = decision_history(app, p.id)
        return {
            "id": found.node_id,
            "exists": found.exists,
            "events": [entry_view(e) for e in found.entries],
            "total": len(found.entries),
        }

    registry.add("cstp.getDecisionHistory", HistoryParams, history)
