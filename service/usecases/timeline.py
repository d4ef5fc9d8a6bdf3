"""A decision's history: every event that touched it, with what each changed.

Read from the log through :class:`~graph.history.HistoryIndex` (the seqs of the events naming a
node), so it covers what the graph no longer holds: values an update replaced, links that were
removed, a decision that was forgotten. ``before``/``after`` come from folding the node's own
events in log order, the way :class:`~graph.state.GraphState` applies them (an update merges
its changes, a ``None`` removes the field; a review replaces the review fields).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graph.errors import NodeNotFoundError
from graph.events import Event, Operation

from .history import Historied

#: The fields a review sets (what ``before``/``after`` report for a review).
_REVIEW_FIELDS = {
    "outcome": "outcome",
    "actual_result": "actual_result",
    "lessons": "lessons",
    "notes": "review_notes",
    "affected_kpis": "affected_kpis",
}
#: Bookkeeping every update moves; not a change anyone made.
_STAMPS = frozenset({"updated_at", "updated_by", "version"})


@dataclass(frozen=True)
class HistoryEntry:
    seq: int
    ts: str
    actor: str
    op: str
    action: str
    changes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edge: dict[str, Any] | None = None
    review: dict[str, Any] | None = None
    note: dict[str, Any] | None = None
    event_id: str = ""


@dataclass(frozen=True)
class DecisionHistory:
    node_id: str
    exists: bool
    entries: list[HistoryEntry]


def decision_history(app: Historied, node_id: str) -> DecisionHistory:
    """Every event that named ``node_id``, oldest first; unknown ids are refused."""
    entries: list[HistoryEntry] = []
    attrs: dict[str, Any] = {}
    for event in app.history.events_of(node_id):
        entries.extend(_entries(event, node_id, attrs))
    if not entries:
        raise NodeNotFoundError(node_id)
    entries = sorted(
        entries + _dropped_by_forget(app, node_id, entries), key=lambda e: (e.seq, e.action)
    )
    with app.store.lock:
        exists = node_id in app.store.graph
    return DecisionHistory(node_id, exists, entries)


def _dropped_by_forget(
    app: Historied, node_id: str, entries: list[HistoryEntry]
) -> list[HistoryEntry]:
    """The edges a forget of the *other* end removed (its event names only the forgotten
    node): an ``unlinked`` entry for each edge still standing then, with ``forgotten``."""
    standing: dict[tuple[str, str, str], HistoryEntry] = {}
    for entry in entries:
        if entry.edge is None:
            continue
        ends = {str(entry.edge["source"]), str(entry.edge["target"])}
        kind = entry.edge.get("type")
        if entry.action == "unlinked":  # either direction (symmetric types); no type: all
            for key in [k for k in standing if set(k[:2]) == ends and kind in (None, k[2])]:
                standing.pop(key)
        else:
            standing.setdefault(
                (str(entry.edge["source"]), str(entry.edge["target"]), str(kind)), entry
            )
    out: list[HistoryEntry] = []
    others = sorted({end for key in standing for end in key[:2] if end != node_id})
    for other in others:
        seqs = app.history.seqs_of(other)
        last = app.store.read_events(seqs[-1], seqs[-1]) if seqs else []
        if not last or last[0].op is not Operation.FORGET:
            continue
        forget = last[0]
        for (source, target, kind), linked in standing.items():
            if other in (source, target) and linked.seq < forget.seq:
                edge = {"source": source, "target": target, "type": kind, "forgotten": other}
                auto = linked.action == "auto-linked"
                if auto:
                    edge["origin"] = "auto"
                out.append(
                    HistoryEntry(
                        seq=forget.seq,
                        ts=forget.ts,
                        actor=forget.actor,
                        op=forget.op.value,
                        action="auto-unlinked" if auto else "unlinked",
                        edge=edge,
                        event_id=forget.id,
                    )
                )
    return out


def _entries(event: Event, node_id: str, attrs: dict[str, Any]) -> list[HistoryEntry]:
    """What ``event`` did to ``node_id``; ``attrs`` is the node as folded so far (updated)."""
    base: dict[str, Any] = {
        "seq": event.seq,
        "ts": event.ts,
        "actor": event.actor,
        "op": event.op.value,
        "event_id": event.id,
    }
    payload = event.payload
    note = payload.get("note") if isinstance(payload.get("note"), dict) else None
    out: list[HistoryEntry] = []
    own = _own_node(payload, node_id)
    if own is not None:
        attrs.clear()
        attrs.update(own)
        after = {k: {"before": None, "after": v} for k, v in sorted(own.items()) if k != "id"}
        action = "imported" if event.op is Operation.IMPORT else "recorded"
        out.append(HistoryEntry(**base, action=action, changes=after, note=note))
    elif event.op is Operation.UPDATE and payload.get("id") == node_id:
        changes = _fold(attrs, dict(payload.get("changes") or {}))
        out.append(HistoryEntry(**base, action="updated", changes=changes, note=note))
    elif event.op is Operation.REVIEW and payload.get("id") == node_id:
        review = {k: payload.get(k) for k in _REVIEW_FIELDS if payload.get(k) is not None}
        wanted = {_REVIEW_FIELDS[k]: payload.get(k) for k in _REVIEW_FIELDS}
        wanted["status"] = "reviewed"
        changes = _fold(attrs, wanted)
        out.append(HistoryEntry(**base, action="reviewed", changes=changes, review=review))
    elif event.op is Operation.SET_LIFECYCLE and payload.get("id") == node_id:
        changes = _fold(attrs, {"lifecycle": payload.get("lifecycle")}, default="accepted")
        out.append(HistoryEntry(**base, action="lifecycle", changes=changes, note=note))
    elif event.op is Operation.FORGET and payload.get("id") == node_id:
        out.append(HistoryEntry(**base, action="forgotten", note=note))
    for edge in _edges_touching(event, node_id):
        out.append(HistoryEntry(**base, action=_edge_action(event, edge, node_id), edge=edge))
    return out


def _own_node(payload: dict[str, Any], node_id: str) -> dict[str, Any] | None:
    node = payload.get("node")
    if isinstance(node, dict) and node.get("id") == node_id:
        return dict(node)
    for item in payload.get("nodes") or ():
        if isinstance(item, dict) and item.get("id") == node_id:
            return dict(item)
    return None


def _fold(
    attrs: dict[str, Any], changes: dict[str, Any], default: Any = None
) -> dict[str, dict[str, Any]]:
    """Apply ``changes`` to ``attrs``; the fields whose value changed, before and after."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in sorted(changes.items()):
        if key in _STAMPS:
            continue
        before = attrs.get(key, default)
        if value is None:
            attrs.pop(key, None)
        else:
            attrs[key] = value
        if before != value:
            out[key] = {"before": before, "after": value}
    return out


def _edges_touching(event: Event, node_id: str) -> list[dict[str, Any]]:
    payload = event.payload
    if event.op is Operation.UNLINK:
        ends = (payload.get("source"), payload.get("target"))
        if node_id in ends:
            return [{"source": ends[0], "target": ends[1], "type": payload.get("type")}]
        return []
    edges = payload.get("edges")
    if not isinstance(edges, list):
        return []
    return [
        {k: e.get(k) for k in ("source", "target", "type", "origin", "context") if k in e}
        for e in edges
        if isinstance(e, dict) and node_id in (e.get("source"), e.get("target"))
    ]


def _edge_action(event: Event, edge: dict[str, Any], node_id: str) -> str:
    if event.op is Operation.UNLINK:
        return "unlinked"
    if edge.get("type") == "supersedes":
        return "supersedes" if edge.get("source") == node_id else "superseded"
    return "auto-linked" if edge.get("origin") == "auto" else "linked"
