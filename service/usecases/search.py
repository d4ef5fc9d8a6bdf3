"""CSTP's search variants beside plain ranking: list mode (an empty query) and bridge-side
search (``bridgeSide``: match the query against one side of each decision's bridge).

CSTP implements ``bridgeSide`` by prefixing the query with ``Structure:``/``Function:`` and
searching the whole decision anyway; here the chosen side itself is searched: the decisions
that describe that side are ranked by the cosine similarity of the query to that text.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

import numpy as np

from graph.enums import NodeKind
from retrieval.filters import RecallFilters, passes
from retrieval.matrix import Vector

from .context import Decigraph
from .reads import Read, _read

BridgeSide = Literal["structure", "function"]
#: Side texts embedded at most once per process (a bridge rarely changes), within this bound.
CACHE_SIZE = 20_000
#: Beyond this many candidates, the side is searched among the best plain matches only.
MAX_CANDIDATES = 400


class _SideVectors:
    """An LRU of side-text embeddings (per embedder: the cache lives on one app's index)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vectors: OrderedDict[str, Vector] = OrderedDict()

    def get_many(self, app: Decigraph, texts: list[str]) -> list[Vector]:
        with self._lock:
            missing = sorted({t for t in texts if t not in self._vectors})
        fresh = app.index.embed(missing) if missing else []
        with self._lock:
            for text, vector in zip(missing, fresh, strict=True):
                self._vectors[text] = vector
            out = []
            for text in texts:
                known = self._vectors.get(text)
                # Evicted meanwhile by another caller: embed it again.
                vector = known if known is not None else app.index.embed([text])[0]
                self._vectors[text] = vector
                self._vectors.move_to_end(text)
                out.append(vector)
            while len(self._vectors) > CACHE_SIZE:
                self._vectors.popitem(last=False)
            return out


_CACHES: dict[int, _SideVectors] = {}
_CACHES_LOCK = threading.Lock()


def _cache(app: Decigraph) -> _SideVectors:
    with _CACHES_LOCK:
        return _CACHES.setdefault(id(app.index), _SideVectors())


@dataclass(frozen=True)
class SideHit:
    read: Read
    similarity: float

    @property
    def distance(self) -> float:
        return round(1.0 - self.similarity, 6)


def bridge_search(
    app: Decigraph,
    query: str,
    side: BridgeSide,
    limit: int,
    filters: RecallFilters,
    candidates: list[str] | None = None,
) -> list[SideHit]:
    """Decisions whose bridge ``side`` best matches ``query``, most similar first (ties by id).

    ``candidates`` restricts the search (the best plain matches, when the store is large);
    decisions without that side never match.
    """
    active = (
        filters
        if filters.kind is not None
        else filters.model_copy(update={"kind": [NodeKind.DECISION]})
    )
    with app.store.lock:
        G = app.store.graph
        pool = candidates if candidates is not None else list(G.nodes)
        sides: list[tuple[str, str]] = []
        for node_id in pool:
            if node_id not in G or not passes(G, active, node_id):
                continue
            bridge = G.nodes[node_id].get("bridge") or {}
            text = str(bridge.get(side) or "").strip()
            if text:
                sides.append((node_id, text))
    if not sides:
        return []
    query_vector = app.index.embed([query])[0]
    vectors = _cache(app).get_many(app, [text for _, text in sides])
    matrix = np.vstack(vectors)
    similarities = matrix @ query_vector
    ranked = sorted(
        zip((node_id for node_id, _ in sides), similarities.tolist(), strict=True),
        key=lambda pair: (-pair[1], pair[0]),
    )[:limit]
    with app.store.lock:
        G = app.store.graph
        return [
            SideHit(_read(app.store, node_id), float(similarity))
            for node_id, similarity in ranked
            if node_id in G
        ]
