"""Absolute relevance: how likely a stored decision is to matter for a text an agent is about
to act on, as a probability in [0, 1] that means the same for every query.

Recall's scores are relative (the best hit of any query scores 1.0), so they cannot say
"nothing here is relevant". This model reads a few query-independent features of one
(query, decision) pair and maps them through a logistic curve fitted on labelled agent
sessions (``scripts/train_relevance.py``; the data: ``bench/agent_sessions/dev``, written by
people who never saw this code). Answers keep a decision as context only when its relevance
reaches a floor (``Settings.relevance_floor``).

Features, each comparable across queries and store sizes:

- ``cosine``: the cosine of the query's embedding and the decision's stored embedding;
- ``lead``: ``cosine`` minus the best cosine of any decision for this query (0 for the best):
  how far behind the closest decision this one is;
- ``coverage``: the share of the query's keyword weight (BM25 idf of each distinct term) the
  decision's text holds.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .keyword import KeywordIndex
from .text import terms

MODEL_FILE = Path(__file__).with_name("relevance_model.json")
FEATURES = ("cosine", "lead", "coverage")


@dataclass(frozen=True, slots=True)
class RelevanceModel:
    """A logistic curve over :data:`FEATURES`: ``P = 1 / (1 + exp(-(bias + w . x)))``."""

    weights: tuple[float, ...]
    bias: float
    version: str = "untrained"

    def probability(self, features: Sequence[float]) -> float:
        z = self.bias + sum(w * x for w, x in zip(self.weights, features, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    @classmethod
    def load(cls, path: Path = MODEL_FILE) -> RelevanceModel:
        doc = json.loads(path.read_text())
        if tuple(doc["features"]) != FEATURES:
            raise ValueError(f"{path}: features {doc['features']} are not {list(FEATURES)}")
        return cls(tuple(float(w) for w in doc["weights"]), float(doc["bias"]), doc["version"])


@functools.cache
def default_model() -> RelevanceModel:
    """The shipped model (read once)."""
    return RelevanceModel.load()


def coverage(index: KeywordIndex, query_terms: Sequence[str], doc_id: str) -> float:
    """The share of the idf weight of ``query_terms`` (distinct) that ``doc_id`` holds.

    Examples
    --------
    >>> index = KeywordIndex()
    >>> index.upsert("aaaaaaaa", "Use PostgreSQL for the ledger")
    >>> index.upsert("bbbbbbbb", "Cache sessions in Redis")
    >>> round(coverage(index, terms("ledger in Redis"), "bbbbbbbb"), 2)
    0.5
    """
    distinct = sorted(set(query_terms))
    if not distinct or doc_id not in index:
        return 0.0
    held = index.terms_of(doc_id)
    weights = {t: index.idf(t) for t in distinct}
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in held) / total if total else 0.0


def features(
    cosines: Mapping[str, float], index: KeywordIndex, query: str, best: float | None = None
) -> dict[str, tuple[float, float, float]]:
    """Each decision's :data:`FEATURES` for ``query``. ``cosines`` holds the candidates'
    cosines; ``best`` is the best cosine of any decision (default: the best candidate's)."""
    if not cosines:
        return {}
    top = max(cosines.values()) if best is None else best
    query_terms = terms(query)
    return {
        node_id: (cos, cos - top, coverage(index, query_terms, node_id))
        for node_id, cos in cosines.items()
    }


def scored(
    found: Mapping[str, Sequence[float]], model: RelevanceModel | None = None
) -> dict[str, float]:
    """Each candidate's absolute relevance from its :func:`features`, rounded to 3 places."""
    model = model or default_model()
    return {node_id: round(model.probability(x), 3) for node_id, x in found.items()}


def relevance(
    cosines: Mapping[str, float],
    index: KeywordIndex,
    query: str,
    model: RelevanceModel | None = None,
    best: float | None = None,
) -> dict[str, float]:
    """Each candidate's absolute relevance to ``query``, rounded to 3 places."""
    return scored(features(cosines, index, query, best), model)
