"""What an agent should be told before it acts or starts a task: a *briefing*.

One pass over the decisions nearest the text, read three ways:

- **conflicts**: the contradiction judge's raised pairs (every tier), and decisions the text
  would *revive*: when it reads like a decision that was superseded, the decision that replaced
  it is in conflict ("revives X, which Y replaced");
- **failures**: decisions reviewed as ``failure`` or ``abandoned`` (and ``partial`` ones with a
  lesson) on the same subject, with their lesson and what replaced them;
- **decisions**: decisions in force whose absolute relevance (:mod:`retrieval.relevance`)
  reaches the floor, each with one line saying why it is there; superseded ones only as
  "replaced by".

Every item carries a one-line ``why``; scoring internals only when asked (``explain``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from graph.enums import EdgeType, Lifecycle, NodeKind
from graph.lifecycle import effective_lifecycle, successors_of
from retrieval.contradiction.tiers import Conflict
from retrieval.filters import RecallFilters
from retrieval.matrix import Vector
from retrieval.relevance import features, relevance

from .context import Decigraph

#: How many nearest decisions are read (the briefing never names more than ``limit``).
POOL = 40
#: Outcomes that make a decision a lesson for anyone trying the same again.
FAILED = frozenset({"failure", "abandoned"})
#: A judged pair below this P(contradicts) is not shown as a conflict (the gate's review tier
#: starts lower; an agent pays for every false alarm).
SHOW_CONFLICT = 0.5
#: A superseded decision at least this relevant, which the text agrees with (the judge reads
#: no contradiction), makes its replacement a conflict.
REVIVES = 0.5


@dataclass(frozen=True)
class Item:
    """One decision in a briefing and why it is there."""

    id: str
    text: str
    why: str
    relevance: float
    role: str  # conflict | failure | superseded | decision
    tier: str | None = None
    p: float | None = None
    outcome: str | None = None
    lesson: str | None = None
    replaced_by: str | None = None
    signals: dict[str, float] = field(default_factory=dict)


@dataclass
class Briefing:
    conflicts: list[Item] = field(default_factory=list)
    failures: list[Item] = field(default_factory=list)
    decisions: list[Item] = field(default_factory=list)

    def items(self) -> list[Item]:
        return [*self.conflicts, *self.failures, *self.decisions]

    def ids(self) -> list[str]:
        return [i.id for i in self.items()]


def _live_replacement(G: nx.MultiDiGraph[str], node_id: str) -> str | None:
    """The decision in force at the end of ``node_id``'s supersession chain (None if none)."""
    seen = {node_id}
    current = node_id
    while True:
        newer = [n for n in successors_of(G, current) if n not in seen]
        if not newer:
            return None if current == node_id else current
        current = newer[0]
        seen.add(current)
        if effective_lifecycle(G, current) not in (Lifecycle.SUPERSEDED, Lifecycle.REJECTED):
            return current


def _dependents(G: nx.MultiDiGraph[str], node_id: str) -> int:
    key = EdgeType.DEPENDS_ON.value
    return sum(1 for _, _, k in G.in_edges(node_id, keys=True) if k == key)


def _lesson(attrs: dict[str, Any]) -> str | None:
    text = attrs.get("lessons") or attrs.get("actual_result")
    return str(text) if text else None


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def nearest_decisions(
    app: Decigraph, vector: Vector, project: str | None = None
) -> dict[str, float]:
    """Cosines of the :data:`POOL` decisions nearest ``vector`` (superseded ones included)."""
    filters = RecallFilters(kind=[NodeKind.DECISION], include_superseded=True, project=project)
    return dict(app.index.vector_search(vector, POOL, filters))


def brief(
    app: Decigraph,
    text: str,
    vector: Vector,
    conflicts: Sequence[Conflict] = (),
    *,
    floor: float,
    limit: int = 8,
    project: str | None = None,
    explain: bool = False,
) -> Briefing:
    """The briefing for ``text`` (embedded as ``vector``): ``conflicts`` are the judge's raised
    pairs for it (a verdict's), ``floor`` the least relevance a decision needs to be named as
    context; at most ``limit`` decisions are named in all."""
    cosines = nearest_decisions(app, vector, project)
    G = app.store.graph
    with app.store.lock:
        cosines = {i: c for i, c in cosines.items() if i in G}
        rel = relevance(cosines, app.index.keyword, text)
        signals = features(cosines, app.index.keyword, text) if explain else {}
        attrs = {i: dict(G.nodes[i]) for i in cosines}
        state = {i: effective_lifecycle(G, i) for i in cosines}
        replacement = {
            i: _live_replacement(G, i) for i in cosines if state[i] is Lifecycle.SUPERSEDED
        }
        dependents = {i: _dependents(G, i) for i in cosines}
        judged_text = {c.target: str(G.nodes[c.target]["text"]) for c in conflicts if c.target in G}
    out = Briefing()
    named: set[str] = set()

    def sig(node_id: str, **more: float) -> dict[str, float]:
        if not explain:
            return {}
        cos, lead, cov = signals.get(node_id, (0.0, 0.0, 0.0))
        return {"cosine": round(cos, 3), "lead": round(lead, 3), "coverage": round(cov, 3), **more}

    # 1. Conflicts the judge raised (every tier), strongest first.
    for c in sorted(conflicts, key=lambda c: (-c.probability, c.target)):
        if c.probability < SHOW_CONFLICT or c.target in named:
            continue
        relied = dependents.get(c.target, 0)
        why = f"{c.tier}: {c.reason}" + (f"; {relied} decisions rely on it" if relied else "")
        out.conflicts.append(
            Item(
                c.target,
                judged_text.get(c.target, c.statement),
                why,
                rel.get(c.target, 0.0),
                "conflict",
                tier=c.tier,
                p=round(c.probability, 3),
                signals=sig(c.target, p=round(c.probability, 3)),
            )
        )
        named.add(c.target)
    # 2. Revivals: the text reads like a superseded decision -> its replacement is in conflict.
    revived = [i for i in rel if replacement.get(i) and rel[i] >= REVIVES]
    if revived:
        pairs = [(str(attrs[i]["text"]), text) for i in revived]
        scores = app.pair_judge.score(pairs)
        for old, s in sorted(zip(revived, scores, strict=True), key=lambda t: (-rel[t[0]], t[0])):
            new = replacement[old]
            if new is None or new in named or s.contradicts >= SHOW_CONFLICT:
                continue
            with app.store.lock:
                new_text = str(G.nodes[new]["text"]) if new in G else ""
            out.conflicts.append(
                Item(
                    new,
                    new_text,
                    f"review: revives {old}, which this replaced",
                    rel.get(new, rel[old]),
                    "conflict",
                    tier="review",
                    signals=sig(new, revived=rel[old]),
                )
            )
            named.add(new)
    # 3. Failures and lessons on the same subject.
    for node_id in sorted(rel, key=lambda i: (-rel[i], i)):
        a = attrs[node_id]
        outcome = a.get("outcome")
        lesson = _lesson(a)
        failed = outcome in FAILED or (outcome == "partial" and lesson)
        if not failed or rel[node_id] < floor or node_id in named:
            continue
        newer = replacement.get(node_id)
        why = f"{outcome}" + (f"; replaced by {newer}" if newer else "")
        out.failures.append(
            Item(
                node_id,
                str(a["text"]),
                why,
                rel[node_id],
                "failure",
                outcome=str(outcome),
                lesson=lesson,
                replaced_by=newer,
                signals=sig(node_id),
            )
        )
        named.add(node_id)
    # 4. Decisions in force (superseded ones only as what replaced them), most relevant first.
    for node_id in sorted(rel, key=lambda i: (-rel[i], i)):
        if len(named) >= limit:
            break
        if node_id in named or rel[node_id] < floor:
            continue
        if state[node_id] is Lifecycle.REJECTED:
            continue
        a = attrs[node_id]
        newer = replacement.get(node_id)
        if state[node_id] is Lifecycle.SUPERSEDED:
            role, why = "superseded", f"superseded by {newer}" if newer else "superseded"
        else:
            relied = dependents[node_id]
            role = "decision"
            why = "same subject" + (f"; {relied} decisions rely on it" if relied else "")
        out.decisions.append(
            Item(
                node_id,
                str(a["text"]),
                why,
                rel[node_id],
                role,
                outcome=a.get("outcome"),
                replaced_by=newer,
                signals=sig(node_id),
            )
        )
        named.add(node_id)
    return out


def item_view(item: Item, width: int = 160) -> dict[str, Any]:
    """An item as an agent reads it: id, statement (clipped), why, relevance; the rest only
    when set."""
    view: dict[str, Any] = {
        "id": item.id,
        "text": _clip(item.text, width),
        "why": item.why,
        "relevance": item.relevance,
    }
    if item.lesson:
        view["lesson"] = _clip(item.lesson, width)
    if item.p is not None:
        view["p"] = item.p
    if item.signals:
        view["signals"] = item.signals
    return view
