"""CSTP ``queryDecisions`` filters, applied in every retrieval mode.

Filters are checked against the graph node itself (the source of truth), so they are exact in
every mode. The stable, selective ones (kind, category, project, stakes, confidence, date) are
also pushed down to ChromaDB as a ``where`` clause so a restrictive filter does not starve the
vector top-k; the rest (review status, outcome, tags, lifecycle) change with later events and
are checked after.

State filters (one rule for ``listDecisions``, ``queryDecisions`` and ``recall``):

- ``status`` names CSTP review statuses (``pending``, ``reviewed``); for compatibility it may
  also name lifecycles, which count as if given in ``lifecycle``.
- ``lifecycle`` names effective lifecycles (``proposed``, ``accepted``, ``rejected``,
  ``superseded``; :mod:`graph.lifecycle`), the same value every answer reports.
- Values on one axis are alternatives; the two axes must both match.
- Superseded nodes pass only with ``include_superseded`` or when the filter names
  ``superseded`` (asking for them is asking to see them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from pydantic.alias_generators import to_camel

from graph.builders import raw_adjacency
from graph.enums import Category, EdgeType, Lifecycle, NodeKind, ReviewStatus, Stakes
from graph.lifecycle import is_superseded, lifecycle_of
from graph.timeutil import UtcDatetime, format_ts

_REVIEW_VALUES = frozenset(s.value for s in ReviewStatus)
_STATUS_VALUES = _REVIEW_VALUES | {lc.value for lc in Lifecycle}


class RecallFilters(BaseModel):
    """Filters shared by ``queryDecisions`` and ``recall`` (camelCase or snake_case keys)."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )

    category: list[Category] | None = None
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    max_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    date_after: UtcDatetime | None = None
    date_before: UtcDatetime | None = None
    stakes: list[Stakes] | None = None
    status: list[str] | None = None
    lifecycle: list[Lifecycle] | None = None
    project: str | None = None
    tags: list[str] | None = None
    has_outcome: bool | None = None
    kind: list[NodeKind] | None = None
    include_superseded: bool = False
    _review: frozenset[str] | None = PrivateAttr(default=None)
    _lifecycles: frozenset[str] | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Split the state filters by axis once (see the module docstring)."""
        status = set(self.status or ())
        review = status & _REVIEW_VALUES
        lifecycles = (status - _REVIEW_VALUES) | {lc.value for lc in self.lifecycle or ()}
        self._review = frozenset(review) if review else None
        self._lifecycles = frozenset(lifecycles) if lifecycles else None

    @field_validator("category", "stakes", "kind", "lifecycle", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        values = [value] if isinstance(value, str) else value
        if isinstance(values, list):
            for item in values:
                if item not in _STATUS_VALUES:
                    allowed = ", ".join(sorted(_STATUS_VALUES))
                    raise ValueError(f"{item!r} is not one of: {allowed}")
        return values

    @model_validator(mode="after")
    def _ranges(self) -> RecallFilters:
        low, high = self.min_confidence, self.max_confidence
        if low is not None and high is not None and low > high:
            raise ValueError("minConfidence must not exceed maxConfidence")
        if self.date_after and self.date_before and self.date_after > self.date_before:
            raise ValueError("dateAfter must not be later than dateBefore")
        return self

    def is_empty(self) -> bool:
        return self == NO_FILTERS

    @property
    def shows_superseded(self) -> bool:
        """Whether superseded nodes may pass: asked for, or named by a state filter."""
        lifecycles = self._lifecycles or ()
        return self.include_superseded or Lifecycle.SUPERSEDED.value in lifecycles

    @property
    def review_values(self) -> frozenset[str] | None:
        """The review statuses the state filters name (``None``: any)."""
        return self._review

    @property
    def lifecycle_values(self) -> frozenset[str] | None:
        """The effective lifecycles the state filters name (``None``: any)."""
        return self._lifecycles

    def matches(self, attrs: Mapping[str, Any], superseded: bool = False) -> bool:
        """Whether a node (its graph attribute dict) passes every filter."""
        if superseded and not self.shows_superseded:
            return False
        if self.kind is not None and attrs.get("kind", "decision") not in self.kind:
            return False
        if self.category is not None and attrs.get("category") not in self.category:
            return False
        if self.stakes is not None and attrs.get("stakes") not in self.stakes:
            return False
        if self.project is not None and attrs.get("project") != self.project:
            return False
        if not self.confidence_ok(attrs.get("confidence")):
            return False
        if not self.date_ok(node_time(attrs)):
            return False
        if self._review is not None and attrs.get("status", "pending") not in self._review:
            return False
        if (
            self._lifecycles is not None
            and lifecycle_of(attrs, superseded).value not in self._lifecycles
        ):
            return False
        if self.has_outcome is not None and ("outcome" in attrs) != self.has_outcome:
            return False
        return not (self.tags and not set(self.tags) & set(attrs.get("tags", ())))

    def confidence_ok(self, confidence: float | None) -> bool:
        if self.min_confidence is None and self.max_confidence is None:
            return True
        if confidence is None:
            return False
        if self.min_confidence is not None and confidence < self.min_confidence:
            return False
        return self.max_confidence is None or confidence <= self.max_confidence

    def date_ok(self, when: str) -> bool:
        if self.date_after is not None and when < format_ts(self.date_after):
            return False
        return self.date_before is None or when <= format_ts(self.date_before)

    def facets(self) -> dict[str, list[str]]:
        """The exact-match filters, by node attribute (for the facet index)."""
        out: dict[str, list[str]] = {}
        for key, values in (
            ("kind", self.kind),
            ("category", self.category),
            ("stakes", self.stakes),
        ):
            if values is not None:
                out[key] = [str(v) for v in values]
        if self.project is not None:
            out["project"] = [self.project]
        return out

    def chroma_where(self) -> dict[str, Any] | None:
        """The pushed-down part as a Chroma ``where`` clause (``None`` when there is none)."""
        clauses: list[dict[str, Any]] = []
        for key, values in (
            ("kind", self.kind),
            ("category", self.category),
            ("stakes", self.stakes),
        ):
            if values is not None:
                clauses.append({key: {"$in": [str(v) for v in values]}})
        if self.project is not None:
            clauses.append({"project": self.project})
        if self.min_confidence is not None:
            clauses.append({"confidence": {"$gte": self.min_confidence}})
        if self.max_confidence is not None:
            clauses.append({"confidence": {"$lte": self.max_confidence}})
        if self.date_after is not None:
            clauses.append({"time": {"$gte": self.date_after.timestamp()}})
        if self.date_before is not None:
            clauses.append({"time": {"$lte": self.date_before.timestamp()}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}


NO_FILTERS = RecallFilters()


def passes(G: nx.MultiDiGraph[str], filters: RecallFilters, node_id: str) -> bool:
    """Whether ``node_id`` is a node of ``G`` that passes ``filters``.

    The one filter predicate of every retrieval path: superseded nodes pass only with
    ``include_superseded`` or when the state filters name ``superseded``; ``status`` and
    ``lifecycle`` match the effective lifecycle (see the module docstring).
    """
    attrs = G.nodes.get(node_id)
    return attrs is not None and matcher(filters)(attrs, is_superseded(G, node_id))


Matcher = Callable[[Mapping[str, Any], bool], bool]
"""``RecallFilters.matches`` compiled: ``(node attributes, superseded) -> passes``."""

_MATCHERS: dict[int, tuple[RecallFilters, Matcher]] = {}
_MATCHERS_KEPT = 64


def matcher(filters: RecallFilters) -> Matcher:
    """:meth:`RecallFilters.matches` with the filter's fields read once: only the filters that
    are set are checked (a ranking asks about hundreds of nodes; reading a pydantic private
    attribute costs more than the check). The same verdict for every node (tested)."""
    kept = _MATCHERS.get(id(filters))
    if kept is not None and kept[0] is filters:
        return kept[1]
    compiled = _compile(filters)
    if len(_MATCHERS) >= _MATCHERS_KEPT:
        _MATCHERS.clear()
    _MATCHERS[id(filters)] = (filters, compiled)
    return compiled


def accepting(G: nx.MultiDiGraph[str], filters: RecallFilters) -> Callable[[str], bool]:
    """``passes(G, filters, ·)`` as one closure, for loops over many nodes (same verdicts)."""
    match = matcher(filters)
    raw = raw_adjacency(G)  # G.nodes and graph.lifecycle.is_superseded, without their views
    nodes, pred = raw.nodes, raw.pred
    supersedes = EdgeType.SUPERSEDES.value
    # The superseded flag only matters to the superseded rule and the lifecycle filter.
    needs_superseded = not filters.shows_superseded or filters.lifecycle_values is not None

    def accept(node_id: str) -> bool:
        attrs = nodes.get(node_id)
        if attrs is None:
            return False
        superseded = needs_superseded and any(
            supersedes in keyed for keyed in pred[node_id].values()
        )
        return match(attrs, superseded)

    return accept


def _compile(f: RecallFilters) -> Matcher:
    shows = f.shows_superseded
    checks: list[Matcher] = []
    if (kinds := f.kind) is not None:
        checks.append(lambda a, s: a.get("kind", "decision") in kinds)
    if (categories := f.category) is not None:
        checks.append(lambda a, s: a.get("category") in categories)
    if (stakes := f.stakes) is not None:
        checks.append(lambda a, s: a.get("stakes") in stakes)
    if (project := f.project) is not None:
        checks.append(lambda a, s: a.get("project") == project)
    if f.min_confidence is not None or f.max_confidence is not None:
        checks.append(lambda a, s: f.confidence_ok(a.get("confidence")))
    if f.date_after is not None or f.date_before is not None:
        checks.append(lambda a, s: f.date_ok(node_time(a)))
    if (review := f.review_values) is not None:
        checks.append(lambda a, s: a.get("status", "pending") in review)
    if (lifecycles := f.lifecycle_values) is not None:
        checks.append(lambda a, s: lifecycle_of(a, s).value in lifecycles)
    if (outcome := f.has_outcome) is not None:
        checks.append(lambda a, s: ("outcome" in a) == outcome)
    if f.tags:
        tags = set(f.tags)
        checks.append(lambda a, s: bool(tags & set(a.get("tags", ()))))
    if not checks:
        return (lambda a, s: True) if shows else (lambda a, s: not s)

    def match(attrs: Mapping[str, Any], superseded: bool) -> bool:
        if superseded and not shows:
            return False
        return all(check(attrs, superseded) for check in checks)

    return match


def node_time(attrs: Mapping[str, Any]) -> str:
    """When a node happened: ``occurred_at`` for memory items, else ``created_at`` (UTC text)."""
    return str(attrs.get("occurred_at") or attrs["created_at"])


def facet_values(attrs: Mapping[str, Any]) -> dict[str, str]:
    """A node's values of the facet fields (absent fields left out)."""
    out = {"kind": str(attrs.get("kind", "decision"))}
    for key in ("category", "stakes", "project"):
        if attrs.get(key) is not None:
            out[key] = str(attrs[key])
    return out


def vector_metadata(attrs: Mapping[str, Any], when: datetime) -> dict[str, str | float]:
    """The metadata stored beside a vector in ChromaDB (the pushed-down filter fields)."""
    meta: dict[str, str | float] = {
        "kind": str(attrs.get("kind", "decision")),
        "time": when.timestamp(),
    }
    for key in ("category", "stakes", "project"):
        if attrs.get(key) is not None:
            meta[key] = str(attrs[key])
    if attrs.get("confidence") is not None:
        meta["confidence"] = float(attrs["confidence"])
    return meta
