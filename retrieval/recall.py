"""Intent-weighted hybrid recall: anchors by rank fusion, then a bounded beam over the graph.

1. The intent (WHY / WHEN / ENTITY / GENERAL) is detected or given; it picks a
   :class:`~retrieval.intents.WeightPreset`.
2. *Relevance* of any node = keyword BM25 (divided by the best score) + vector cosine (divided
   by the best cosine) + shared query entities (IDF-weighted). Dividing by the maximum never
   zeroes the weakest hit, unlike min-max normalisation.
3. *Anchors*: reciprocal-rank fusion (k = 60) of the vector, keyword and recency top lists.
4. *Traversal*: from the anchors, a beam search; a step from ``u`` to ``v`` offers
   ``v`` the score ``score(u) * family_weight * edge_weight * propagation``; each node keeps
   its best offer and the path it came along. Beam width, depth and a node budget bound it.
   A path is reported edge by edge as stored (``{from, type, to}``: "from <type> to") with
   the direction it was walked, and no node is explained through itself: an offer is refused
   when the offering node's explanation already runs through the node offered to.
5. *Rank*: relevance + best offer, times a time factor when the query names a time; ties by id.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from graph.builders import RawAdjacency, raw_adjacency
from graph.enums import EdgeType, RelationFamily
from graph.timeutil import utc_now

from .entities import entity_keys
from .filters import NO_FILTERS, RecallFilters, accepting
from .index import DualIndex
from .intents import PRESETS, Intent, WeightPreset, detect_intent
from .keyword import KeywordScores
from .matrix import Vector
from .planner import search_keywords
from .timeexpr import TimeConstraint, TimeRelation, parse_time_expression, strip_time_expression

RRF_K = 60


@dataclass(frozen=True)
class RecallTuning:
    """Signal weights and list sizes (tuned on the LoCoMo dev split; see bench/)."""

    keyword_weight: float = 1.0
    vector_weight: float = 0.6
    entity_weight: float = 0.2
    candidates: int = 50  # per list: vector and keyword top-k scored for relevance
    anchors: int = 20
    recency: int = 20
    outside_time_factor: float = 0.3


DEFAULT_TUNING = RecallTuning()


@dataclass(frozen=True, slots=True)
class Step:
    """One edge of the path a result was reached along, as stored: ``source <type> target``.

    ``forward`` says the walk went from ``source`` to ``target``; a walk against the edge
    (reaching the SQLAlchemy decision from the Postgres one it ``depends_on``) is backward.
    Symmetric types are stored both ways and always read forward.
    """

    source: str
    target: str
    type: str
    family: str
    weight: float
    forward: bool = True

    @property
    def walked_from(self) -> str:
        return self.source if self.forward else self.target

    @property
    def walked_to(self) -> str:
        return self.target if self.forward else self.source

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "edgeType": self.type,
            "to": self.target,
            "walked": "forward" if self.forward else "backward",
            "family": self.family,
            "weight": round(self.weight, 4),
        }


def path_nodes(path: list[Step]) -> set[str]:
    """Every node a path passes through, its start and its end included."""
    return {step.walked_from for step in path} | {step.walked_to for step in path}


@dataclass
class RecallHit:
    id: str
    score: float
    relevance: float
    signals: dict[str, float]
    path: list[Step]
    anchor: bool

    def via(self) -> dict[str, Any]:
        """Why this result came back: its anchor signals and the edge path that reached it
        (``start`` is the anchor the walk began at; each hop as stored, see :class:`Step`)."""
        via: dict[str, Any] = {
            "signals": {k: round(v, 4) for k, v in sorted(self.signals.items())},
            "anchor": self.anchor,
            "path": [step.as_dict() for step in self.path],
        }
        if self.path:
            via["start"] = self.path[0].walked_from
        return via


@dataclass
class RecallResult:
    query: str
    intent: Intent
    intent_source: str  # "detected" or "given"
    preset: WeightPreset
    hits: list[RecallHit]
    time_constraint: TimeConstraint | None
    query_time_ms: float
    visited: int = 0
    notes: list[str] = field(default_factory=list)


#: An offer to a node: (value, offering node, (edge type, weight, outgoing), the offerer's
#: explanation path, the offerer's route).
_Offer = tuple[float, str, tuple[str, float, bool], list["Step"], list["Step"]]


@dataclass
class _Candidate:
    relevance: float
    signals: dict[str, float]
    offer: float = 0.0
    path: list[Step] = field(default_factory=list)
    anchor: bool = False
    #: The walk ``offer`` came along (it may run through the node itself: mutual support
    #: within a cluster counts) and steers the walk; ``path``, the explanation, is the
    #: strongest offer's walk that does not, and ``path_offer`` that offer's value.
    route: list[Step] = field(default_factory=list)
    path_offer: float = 0.0

    @property
    def score(self) -> float:
        return self.relevance + self.offer


def recall(
    index: DualIndex,
    query: str,
    limit: int = 10,
    *,
    intent: Intent | str | None = None,
    filters: RecallFilters | None = None,
    now: datetime | None = None,
    presets: Mapping[Intent, WeightPreset] = PRESETS,
    tuning: RecallTuning = DEFAULT_TUNING,
) -> RecallResult:
    """Answer ``query`` from the graph and both indexes; see the module docstring."""
    started = time.perf_counter()
    filters = filters or NO_FILTERS
    chosen = detect_intent(query) if intent is None else Intent(intent)
    if chosen is Intent.WHY and "include_superseded" not in filters.model_fields_set:
        # A why question asks for history: the decision a current one replaced is often the
        # reason for it ("why chunks?": the single COPY that failed), so it is not hidden.
        filters = filters.model_copy(update={"include_superseded": True})
    preset = presets[chosen]
    constraint = parse_time_expression(query, now or utc_now())
    text = strip_time_expression(query, constraint) if constraint else query
    text = text or query
    vector = index.embed([text])[0]  # the slow part, outside the lock writers need
    with index.store.lock:
        window = _resolve_window(index, constraint)
        engine = _Recall(index, text, vector, filters, preset, tuning)
        engine.collect()
        engine.traverse()
        hits = engine.rank(limit, window)
    return RecallResult(
        query=query,
        intent=chosen,
        intent_source="detected" if intent is None else "given",
        preset=preset,
        hits=hits,
        time_constraint=constraint,
        query_time_ms=(time.perf_counter() - started) * 1000.0,
        visited=len(engine.candidates),
    )


def _resolve_window(
    index: DualIndex, constraint: TimeConstraint | None
) -> tuple[datetime | None, datetime | None] | None:
    """The time window a constraint names; "before the migration" looks the event up."""
    if constraint is None:
        return None
    if constraint.event is None:
        return constraint.start, constraint.end
    best = index.keyword.query(constraint.event).top(1)
    if not best:
        return None
    when = index.timeline.time_of(best[0][0])
    if when is None:
        return None
    if constraint.relation is TimeRelation.BEFORE:
        return None, when
    return when + timedelta(microseconds=1), None


class _Recall:
    def __init__(
        self,
        index: DualIndex,
        text: str,
        vector: Vector,
        filters: RecallFilters,
        preset: WeightPreset,
        tuning: RecallTuning,
    ) -> None:
        self.index = index
        self.G = index.store.graph
        self.vector = vector
        self.filters = filters
        self.preset = preset
        self.tuning = tuning
        self.keyword: KeywordScores = index.keyword.query(text)
        self.keyword_max = self.keyword.max() or 1.0
        self.query_entities = [
            (key, index.entities.idf(key))
            for key in entity_keys(text)
            if index.entities.idf(key) > 0
        ]
        self.entity_total = sum(idf for _, idf in self.query_entities) or 1.0
        self.vector_max = 1.0
        self.candidates: dict[str, _Candidate] = {}
        self.anchors: list[str] = []
        self._verdicts: dict[str, bool] = {}  # memo: one ranking asks about a node many times
        self._accept = accepting(self.G, filters)

    def _passes(self, node_id: str) -> bool:
        verdict = self._verdicts.get(node_id)
        if verdict is None:
            verdict = self._verdicts[node_id] = self._accept(node_id)
        return verdict

    def collect(self) -> None:
        tuning = self.tuning
        vector_hits = self.index.vector_search(
            self.vector, tuning.candidates, self.filters, self._passes
        )
        keyword_hits = [
            i
            for i, _ in search_keywords(
                self.index, self.keyword, tuning.candidates, self.filters, self._passes
            )
        ]
        recent = self.index.timeline.latest(tuning.recency, self._passes)
        self.vector_max = max([c for _, c in vector_hits] + [1e-9])
        cosines = dict(vector_hits)
        lists = {"vector": [i for i, _ in vector_hits], "keyword": keyword_hits, "recency": recent}
        fused: dict[str, float] = {}
        ranks: dict[str, dict[str, int]] = {}
        for name, ids in lists.items():
            for rank, node_id in enumerate(ids, start=1):
                fused[node_id] = fused.get(node_id, 0.0) + 1.0 / (RRF_K + rank)
                ranks.setdefault(node_id, {})[name] = rank
        pool = sorted(fused)
        missing = [i for i in pool if i not in cosines]
        cosines.update(self.index.matrix.similarities(self.vector, missing))
        for node_id, candidate in zip(pool, self._score_many(pool, cosines), strict=True):
            for name, rank in ranks[node_id].items():
                candidate.signals[f"{name}Rank"] = float(rank)
            candidate.signals["rrf"] = fused[node_id]
            self.candidates[node_id] = candidate
        self.anchors = sorted(fused, key=lambda i: (-fused[i], i))[: tuning.anchors]
        for node_id in self.anchors:
            self.candidates[node_id].anchor = True

    def _score(self, node_id: str, cosine: float) -> _Candidate:
        t = self.tuning
        keyword = self.keyword.of(node_id) / self.keyword_max
        vector = max(cosine, 0.0) / self.vector_max
        signals = {"keyword": keyword, "vector": vector}
        relevance = t.keyword_weight * keyword + t.vector_weight * vector
        if self.query_entities:
            held = set(self.index.entities.keys_of(node_id))
            share = sum(idf for key, idf in self.query_entities if key in held) / self.entity_total
            if share:
                signals["entity"] = share
                relevance += t.entity_weight * share
        return _Candidate(relevance, signals)

    def _score_many(self, node_ids: list[str], cosines: Mapping[str, float]) -> list[_Candidate]:
        """:meth:`_score` of each node (cosine 0 when unknown), the keyword scores read at once."""
        t = self.tuning
        keyword_max, vector_max = self.keyword_max, self.vector_max
        query_entities, entity_total = self.query_entities, self.entity_total
        keys_of = self.index.entities.keys_of
        out: list[_Candidate] = []
        for node_id, found in zip(node_ids, self.keyword.of_many(node_ids), strict=True):
            keyword = found / keyword_max
            vector = max(cosines.get(node_id, 0.0), 0.0) / vector_max
            signals = {"keyword": keyword, "vector": vector}
            relevance = t.keyword_weight * keyword + t.vector_weight * vector
            if query_entities:
                held = set(keys_of(node_id))
                share = sum(idf for key, idf in query_entities if key in held) / entity_total
                if share:
                    signals["entity"] = share
                    relevance += t.entity_weight * share
            out.append(_Candidate(relevance, signals))
        return out

    def traverse(self) -> None:
        preset = self.preset
        trust = preset.families.relative()
        gains = {t.value: trust[t.family] * preset.propagation for t in EdgeType}
        # Walking a causal edge towards the effect (to what depends on, or was caused by, the
        # source) answers "what followed", not "why": it counts effect_weight as much.
        effect_gains = {
            t.value: gains[t.value] * (preset.effect_weight if t.family is CAUSAL else 1.0)
            for t in EdgeType
        }
        raw = raw_adjacency(self.G)
        frontier = list(self.anchors)
        for _depth in range(preset.max_depth):
            # Each offer keeps the paths its source had when offering (:data:`_Offer`): a source
            # improved later in the same round must not hand the target a path the offer never
            # took; steps are built only for the offers taken. ``offers`` holds each target's
            # best offer (it scores and steers), ``paths`` every offer, for the explanation: the
            # best one whose source is not explained through the target.
            offers: dict[str, _Offer] = {}
            paths: dict[str, list[_Offer]] = {}
            for source in frontier:
                succ, pred = raw.succ[source], raw.pred[source]
                if len(succ) + len(pred) > preset.max_fanout:
                    continue  # a hub's evidence is spread too thin to pass on (and costly)
                parent = self.candidates[source]
                parent_score = parent.score
                on_path = {source, *path_nodes(parent.route)}
                # Every edge at the source, out then in (see _neighbours: the same order).
                for adjacency, outgoing in ((succ, True), (pred, False)):
                    for target, keyed in adjacency.items():
                        if target in on_path:
                            continue
                        for edge_type, attrs in keyed.items():
                            weight = float(attrs.get("weight", 1.0))
                            towards_cause = outgoing != (edge_type in CAUSE_FIRST)
                            gain = gains[edge_type] if towards_cause else effect_gains[edge_type]
                            offer = parent_score * gain * min(weight, 1.0)
                            if offer <= 0:
                                continue
                            edge = (edge_type, weight, outgoing)
                            made = (offer, source, edge, parent.path, parent.route)
                            paths.setdefault(target, []).append(made)
                            best = offers.get(target)
                            if best is None or offer > best[0]:
                                offers[target] = made
            room = max(0, preset.max_nodes - len(self.candidates))
            admitted = sorted(t for t in offers if t not in self.candidates)[:room]
            cosines = self.index.matrix.similarities(self.vector, admitted)
            for target, scored in zip(admitted, self._score_many(admitted, cosines), strict=True):
                self.candidates[target] = scored
            improved: list[str] = []
            for target in sorted(offers):
                candidate = self.candidates.get(target)
                if candidate is None or offers[target][0] <= candidate.offer:
                    continue
                offer, source, (edge_type, weight, outgoing), _, route = offers[target]
                candidate.offer = offer
                candidate.route = [*route, _step(source, target, edge_type, weight, outgoing)]
                improved.append(target)
                explained = self._best_path(target, paths[target], candidate.path_offer)
                if explained is not None:
                    offer, source, (edge_type, weight, outgoing), trail, _ = explained
                    candidate.path_offer = offer
                    candidate.path = [*trail, _step(source, target, edge_type, weight, outgoing)]
            improved.sort(key=lambda i: (-self.candidates[i].score, i))
            frontier = improved[: preset.beam_width]
            if not frontier:
                break

    def _best_path(self, target: str, made: list[_Offer], current: float) -> _Offer | None:
        """The best offer in ``made`` above ``current`` whose source is not explained through
        ``target`` (no circles: see :meth:`_explained_through`); ties: the first made."""
        for offer in sorted(made, key=lambda o: -o[0]):  # stable: the first made wins a tie
            if offer[0] <= current:
                return None
            if not self._explained_through(offer[1], target):
                return offer
        return None

    def _explained_through(self, node_id: str, other: str) -> bool:
        """Whether ``other`` is on ``node_id``'s explanation: its path, the path of that path's
        start, and so on (a path starts at an anchor, which may have been reached too)."""
        seen: set[str] = set()
        while node_id not in seen:
            seen.add(node_id)
            path = self.candidates[node_id].path
            if not path:
                return False
            if other in path_nodes(path):
                return True
            node_id = path[0].walked_from
        return False

    def rank(
        self, limit: int, window: tuple[datetime | None, datetime | None] | None
    ) -> list[RecallHit]:
        scored: list[tuple[float, str]] = []
        for node_id, candidate in self.candidates.items():
            if not self._passes(node_id):
                continue
            score = candidate.score
            if window is not None:
                when = self.index.timeline.time_of(node_id)
                inside = when is not None and _inside(when, window)
                candidate.signals["timeMatch"] = 1.0 if inside else 0.0
                if not inside:
                    score *= self.tuning.outside_time_factor
            scored.append((score, node_id))
        scored.sort(key=lambda s: (-s[0], s[1]))
        out = []
        for score, node_id in scored[:limit]:
            c = self.candidates[node_id]
            out.append(
                RecallHit(node_id, round(score, 6), c.relevance, c.signals, c.path, c.anchor)
            )
        return out


CAUSAL = RelationFamily.CAUSAL
#: Causal types whose source is the cause (``a blocks b``); in the others (``a depends_on b``,
#: ``a caused_by b``, derived ``causal``) the target is the cause.
CAUSE_FIRST = frozenset({EdgeType.BLOCKS.value})


def _inside(when: datetime, window: tuple[datetime | None, datetime | None]) -> bool:
    start, end = window
    return (start is None or when >= start) and (end is None or when < end)


def _step(walked_from: str, walked_to: str, edge_type: str, weight: float, outgoing: bool) -> Step:
    """The hop from ``walked_from`` to ``walked_to`` over an edge found ``outgoing`` (stored
    ``walked_from -> walked_to``) or incoming (stored the other way), in stored direction."""
    kind = EdgeType(edge_type)
    family = kind.family.value
    if outgoing or kind.symmetric:  # a symmetric edge is stored both ways: read it forward
        return Step(walked_from, walked_to, edge_type, family, weight, forward=True)
    return Step(walked_to, walked_from, edge_type, family, weight, forward=False)


def _neighbours(raw: RawAdjacency, node_id: str) -> list[tuple[str, str, float, bool]]:
    """Every edge at ``node_id`` in either direction: (other end, type, weight, outgoing)."""
    out: list[tuple[str, str, float, bool]] = []
    for adjacency, outgoing in ((raw.succ, True), (raw.pred, False)):
        for target, keyed in adjacency.get(node_id, {}).items():
            for edge_type, attrs in keyed.items():
                out.append((target, edge_type, float(attrs.get("weight", 1.0)), outgoing))
    return out
