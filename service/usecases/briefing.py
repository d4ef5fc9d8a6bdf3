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
from retrieval.relevance import features, scored

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
#: ... and the judge reads the text as agreeing with it at least this much.
AGREES = 0.5


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
    #: Why the decision was made (its first reason): what an agent weighs before undoing it.
    because: str | None = None
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


def _because(attrs: dict[str, Any]) -> str | None:
    reasons = attrs.get("reasons") or []
    first = reasons[0] if reasons and isinstance(reasons[0], dict) else None
    return str(first["text"]) if first and first.get("text") else None


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


@dataclass
class _Pool:
    """The decisions nearest the text, read once under the store lock."""

    text: str
    rel: dict[str, float]
    attrs: dict[str, dict[str, Any]]
    state: dict[str, Lifecycle]
    replacement: dict[str, str | None]
    dependents: dict[str, int]
    signals: dict[str, tuple[float, float, float]]
    named: set[str] = field(default_factory=set)

    def sig(self, node_id: str, **more: float) -> dict[str, float]:
        if node_id not in self.signals:
            return dict(more)
        cos, lead, cov = self.signals[node_id]
        return {"cosine": round(cos, 3), "lead": round(lead, 3), "coverage": round(cov, 3), **more}

    def failed(self, node_id: str) -> bool:
        return self.attrs.get(node_id, {}).get("outcome") in FAILED

    def by_relevance(self) -> list[str]:
        return sorted(self.rel, key=lambda i: (-self.rel[i], i))


def _pool(app: Decigraph, text: str, vector: Vector, project: str | None, explain: bool) -> _Pool:
    cosines = nearest_decisions(app, vector, project)
    G = app.store.graph
    with app.store.lock:
        cosines = {i: c for i, c in cosines.items() if i in G}
        state = {i: effective_lifecycle(G, i) for i in cosines}
        found = features(cosines, app.index.keyword, text)
        return _Pool(
            text=text,
            rel=scored(found),
            attrs={i: dict(G.nodes[i]) for i in cosines},
            state=state,
            replacement={
                i: _live_replacement(G, i) for i in cosines if state[i] is Lifecycle.SUPERSEDED
            },
            dependents={i: _dependents(G, i) for i in cosines},
            signals=found if explain else {},
        )


def _judged(app: Decigraph, pool: _Pool, conflicts: Sequence[Conflict], floor: float) -> list[Item]:
    """The judge's raised pairs worth an agent's attention, strongest first: confident
    enough, about a decision relevant to the text (a pair the judge raises against an
    unrelated decision is most often its mistake) unless it blocks, and not against a decision
    that already failed (that one is a lesson)."""
    out = []
    for c in sorted(conflicts, key=lambda c: (-c.probability, c.target)):
        if c.probability < SHOW_CONFLICT or c.target in pool.named or pool.failed(c.target):
            continue
        if c.tier != "block" and pool.rel.get(c.target, 0.0) < floor:
            continue
        with app.store.lock:
            if c.target not in app.store.graph:
                continue
            attrs = app.store.graph.nodes[c.target]
            text, because = str(attrs["text"]), _because(attrs)
            relied = _dependents(app.store.graph, c.target)
        why = f"{c.tier}: {c.reason}" + (f"; {relied} decisions rely on it" if relied else "")
        p = round(c.probability, 3)
        rel = pool.rel.get(c.target, 0.0)
        item = Item(c.target, text, why, rel, "conflict", tier=c.tier, p=p, because=because)
        out.append(item)
        if pool.signals:
            out[-1].signals.update(pool.sig(c.target, p=p))
        pool.named.add(c.target)
    return out


def _revived(app: Decigraph, pool: _Pool) -> list[Item]:
    """Decisions the text would undo by bringing back what they replaced: the text reads like
    a superseded decision (relevant, at least as relevant as its replacement, and the judge
    reads the two as agreeing), so the replacement in force is in conflict."""
    olds = [
        i
        for i in pool.by_relevance()
        if (new := pool.replacement.get(i))
        and pool.rel[i] >= REVIVES
        and pool.rel[i] >= pool.rel.get(new, 0.0)
    ]
    if not olds:
        return []
    scores = app.pair_judge.score([(str(pool.attrs[i]["text"]), pool.text) for i in olds])
    out = []
    for old, s in zip(olds, scores, strict=True):
        new = pool.replacement[old]
        if new is None or new in pool.named or s.compatible < AGREES:
            continue
        with app.store.lock:
            if new not in app.store.graph:
                continue
            attrs = app.store.graph.nodes[new]
            text, because = str(attrs["text"]), _because(attrs)
        why = f"review: brings back {old}, which this replaced"
        rel = pool.rel.get(new, pool.rel[old])
        signals = pool.sig(new, agrees_with_old=round(s.compatible, 3)) if pool.signals else {}
        item = Item(new, text, why, rel, "conflict", tier="review", because=because)
        item.signals.update(signals)
        out.append(item)
        pool.named.add(new)
    return out


def _failures(pool: _Pool, floor: float) -> list[Item]:
    """Decisions on the subject that failed or were abandoned (or partly worked, with a
    lesson), most relevant first, with their lesson and what replaced them."""
    out = []
    for node_id in pool.by_relevance():
        a = pool.attrs[node_id]
        outcome, lesson = a.get("outcome"), _lesson(a)
        if not (outcome in FAILED or (outcome == "partial" and lesson)):
            continue
        if pool.rel[node_id] < floor or node_id in pool.named:
            continue
        newer = pool.replacement.get(node_id)
        why = f"{outcome}" + (f"; replaced by {newer}" if newer else "")
        item = Item(
            node_id,
            str(a["text"]),
            why,
            pool.rel[node_id],
            "failure",
            outcome=str(outcome),
            lesson=lesson,
            replaced_by=newer,
            signals=pool.sig(node_id) if pool.signals else {},
        )
        out.append(item)
        pool.named.add(node_id)
    return out


def _decisions(pool: _Pool, floor: float, limit: int) -> list[Item]:
    """Decisions in force at least ``floor`` relevant (a superseded one as what replaced
    it), most relevant first, until ``limit`` decisions are named in all."""
    out = []
    for node_id in pool.by_relevance():
        if len(pool.named) >= limit:
            break
        if node_id in pool.named or pool.rel[node_id] < floor:
            continue
        if pool.state[node_id] is Lifecycle.REJECTED:
            continue
        newer = pool.replacement.get(node_id)
        if pool.state[node_id] is Lifecycle.SUPERSEDED:
            role, why = "superseded", f"superseded by {newer}" if newer else "superseded"
        else:
            relied = pool.dependents[node_id]
            role = "decision"
            why = "same subject" + (f"; {relied} decisions rely on it" if relied else "")
        a = pool.attrs[node_id]
        item = Item(
            node_id,
            str(a["text"]),
            why,
            pool.rel[node_id],
            role,
            outcome=a.get("outcome"),
            replaced_by=newer,
            signals=pool.sig(node_id) if pool.signals else {},
        )
        out.append(item)
        pool.named.add(node_id)
    return out


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
    context; at most ``limit`` decisions are named besides the conflicts."""
    pool = _pool(app, text, vector, project, explain)
    found = Briefing()
    found.conflicts = _judged(app, pool, conflicts, floor) + _revived(app, pool)
    budget = limit + len(pool.named)
    found.failures = _failures(pool, floor)
    found.decisions = _decisions(pool, floor, budget)
    return found


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
    if item.because:
        view["because"] = _clip(item.because, width)
    if item.p is not None:
        view["p"] = item.p
    if item.signals:
        view["signals"] = item.signals
    return view
