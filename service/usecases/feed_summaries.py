"""One line a person reads for each event of the log (``cstp.listEvents``' ``summary``):
``recorded 3ceb3ffd: Use PostgreSQL for the ledger``, ``updated 3ceb3ffd: confidence=0.9``,
``linked a depends_on b``... Payloads are read defensively: a line is written for any payload
the log holds, whatever its shape.
"""

from __future__ import annotations

from typing import Any

from graph.events import Event, Operation

SUMMARY_MAX = 160


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def _edge(edge: Any) -> tuple[str, str, str]:
    if not isinstance(edge, dict):
        return "?", "?", "?"
    return _text(edge.get("source")), _text(edge.get("type")), _text(edge.get("target"))


def _changes(changes: Any) -> str:
    if not isinstance(changes, dict):
        return ""
    shown = []
    for key in sorted(changes):
        value = changes[key]
        scalar = isinstance(value, int | float | bool)
        short = scalar or (isinstance(value, str) and len(value) <= 24)
        shown.append(f"{key}={_text(value)}" if short and key != "text" else str(key))
    return ", ".join(shown)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _describe(event: Event) -> str:
    p = event.payload
    op = event.op
    node_id = _text(p.get("id"))
    reason = f": {_text(p['reason'])}" if p.get("reason") else ""
    if op in (Operation.RECORD, Operation.REMEMBER):
        node = _dict(p.get("node"))
        verb = "recorded" if op is Operation.RECORD else f"remembered {_text(node.get('kind'))}"
        return f"{verb} {_text(node.get('id'))}: {_text(node.get('text'))}"
    if op is Operation.UPDATE:
        return f"updated {node_id}: {_changes(p.get('changes'))}"
    if op is Operation.REVIEW:
        result = f" ({_text(p['actual_result'])})" if p.get("actual_result") else ""
        return f"reviewed {node_id}: {_text(p.get('outcome'))}{result}"
    if op is Operation.SET_LIFECYCLE:
        return f"set {node_id} to {_text(p.get('lifecycle'))}{reason}"
    if op is Operation.FORGET:
        return f"forgot {node_id}{reason}"
    if op is Operation.UNLINK:
        kind = _text(p.get("type")) or "every type"
        return f"unlinked {_text(p.get('source'))} -> {_text(p.get('target'))} ({kind})"
    edges = _list(p.get("edges"))
    if op in (Operation.LINK, Operation.SUPERSEDE):
        source, kind, target = _edge(edges[0] if edges else None)
        more = f" and {len(edges) - 1} more" if len(edges) > 1 else ""
        if op is Operation.SUPERSEDE:
            return f"{source} supersedes {target}{more}"
        return f"linked {source} {kind} {target}{more}"
    if op is Operation.IMPORT:
        nodes = _list(p.get("nodes"))
        return f"imported {len(nodes)} nodes and {len(edges)} edges"
    if op is Operation.EVIDENCE:
        records = _list(p.get("records"))
        return f"evidence {_text(p.get('kind'))}: {len(records)} record(s)"
    if op is Operation.CIRCUIT:
        before, after = _text(p.get("previousState")), _text(p.get("newState"))
        return f"circuit {_text(p.get('scope'))} {_text(p.get('kind'))}: {before} -> {after}"
    return str(op.value)


def summarize(event: Event) -> str:
    """A line a person reads (at most :data:`SUMMARY_MAX` characters): ``recorded 3ceb3ffd:
    Use PostgreSQL for the ledger``, ``updated 3ceb3ffd: confidence=0.9``, ``linked a depends_on
    b``..."""
    text = _describe(event)
    return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 1] + "…"
