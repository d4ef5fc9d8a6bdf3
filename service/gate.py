"""The pre-record gate: rule guardrails plus the graph constraint, evaluated before any write.

``check_action`` never writes. ``recordDecision`` and ``preAction`` call it first and refuse a
blocked decision unless the caller overrides explicitly (the override is kept in the log).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graph.enums import Lifecycle, NodeKind
from graph.lifecycle import effective_lifecycle
from retrieval.autoedges import Incoming, contradiction_suggestions
from retrieval.entities import entity_keys

from .application import Decigraph
from .guardrails import Finding, Verdict, evaluate_rules

GRAPH_GUARDRAIL = "graph-contradiction"


def check_action(
    app: Decigraph, action: Mapping[str, Any], contradicts: Sequence[str] = ()
) -> Verdict:
    """Every guardrail's verdict on ``action`` (the decision's fields; ``description``/``decision``
    is its statement). ``contradicts`` names decisions the caller links as contradicted."""
    verdict = Verdict()
    evaluate_rules(app.rules, action, verdict)
    verdict.evaluated += 1
    try:
        for finding in graph_constraint(app, action, contradicts):
            verdict.add(finding)
    except Exception as exc:  # fail closed
        message = f"guardrail {GRAPH_GUARDRAIL} could not be evaluated: {exc}"
        verdict.add(Finding(GRAPH_GUARDRAIL, "Graph constraint", message, "block"))
    return verdict


def graph_constraint(
    app: Decigraph, action: Mapping[str, Any], contradicts: Sequence[str]
) -> list[Finding]:
    """Block contradicting an active decision whose salience exceeds the threshold (F045)."""
    text = str(action.get("description") or action.get("decision") or "")
    threshold = app.settings.salience_threshold
    with app.store.lock:
        G = app.store.graph
        targets: dict[str, str] = {t: "linked as contradicted" for t in contradicts if t in G}
        if text:
            vector = app.index.embed([text])[0]
            category = action.get("category")
            item = Incoming(
                id="",
                kind=NodeKind.DECISION,
                text=text,
                when=("", "", ""),
                source=None,
                entities=tuple(entity_keys(text, list(action.get("entities") or []))),
                category=None if category is None else str(category),
                searchable=text,
                vector=vector,
            )
            neighbours = app.index.matrix.nearest(vector, 20)
            for s in contradiction_suggestions(app.index, item, neighbours, app.auto_edges):
                targets.setdefault(s.target, s.reason)
        if not targets:  # the common case: no PageRank (about 0.15 s at 100k) for nothing
            return []
        salience = app.store.salience()
        findings = []
        for target in sorted(targets):
            score = salience.get(target, 0.0)
            if effective_lifecycle(G, target) is not Lifecycle.ACCEPTED or score <= threshold:
                continue
            summary = str(G.nodes[target]["text"])[:120]
            findings.append(
                Finding(
                    GRAPH_GUARDRAIL,
                    "Graph constraint",
                    f"contradicts active decision {target} ({summary!r}; {targets[target]}), "
                    f"whose salience {score:.2f} exceeds {threshold:.2f}",
                    "block",
                    f"supersede {target} first (a supersedes edge from the new decision), "
                    "or record with an explicit override",
                )
            )
        return findings
