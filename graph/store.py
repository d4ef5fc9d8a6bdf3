"""The decision store: the decision operations over the event-sourced graph.

Every change goes through :meth:`~graph.persistence.LoggedGraph._commit` (build the event,
validate it against the current state, append it durably, then apply it); opening, replay and
snapshots live in :mod:`graph.persistence`. Reads go to ``store.graph``, a NetworkX
``MultiDiGraph`` that the free functions in :mod:`graph.algorithms` take as their first argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pydantic

from .algorithms.salience import compute_salience
from .algorithms.salience_local import LocalSalience, local_salience
from .drafts import DecisionDraft, EdgeDraft, MemoryDraft
from .enums import EdgeType, Lifecycle, NodeKind, Outcome
from .errors import DuplicateIdError, NodeNotFoundError, ValidationError
from .events import LEDGER_OPERATIONS, Operation
from .model import MAX_SHORT, Edge, Node, check_node_id
from .options import OpenReport, StoreOptions
from .persistence import LOG_NAME, SNAPSHOT_NAME, Listener, LoggedGraph
from .restore import MAX_ITEMS_PER_EVENT, ImportReport, plan_import
from .state import UPDATABLE_FIELDS, model_error

__all__ = [
    "LOG_NAME",
    "SNAPSHOT_NAME",
    "DecisionStore",
    "LinkResult",
    "Listener",
    "OpenReport",
    "StoreOptions",
]


@dataclass(frozen=True)
class LinkResult:
    edge: Edge
    created: bool


class DecisionStore(LoggedGraph):
    """An event-sourced decision graph in ``data_dir``; use :meth:`open`."""

    #: Salience of every node and the log position it was computed at (see :meth:`salience`).
    _salience: tuple[int, dict[str, float]] | None = None

    # -- reads -----------------------------------------------------------------------------
    def get(self, node_id: str) -> Node:
        if node_id not in self.graph:
            raise NodeNotFoundError(node_id)
        return Node.from_attrs(node_id, self.graph.nodes[node_id])

    def find_external(self, external_id: str) -> str | None:
        return self.state.external_ids.get(external_id)

    def now(self) -> datetime:
        """A reading of the store's clock (what the next event would be stamped with)."""
        return self._clock()

    def allocate_id(self) -> str:
        """A fresh node id; hold :attr:`lock` until the node using it is written."""
        with self._lock:
            return self._ids.node_id(self.graph)

    def salience(self) -> dict[str, float]:
        """Salience of every node (:func:`~graph.algorithms.salience.compute_salience`: 0 when
        nothing relies on it, the same scale at any size), recomputed only when the graph has
        changed."""
        with self._lock:
            if self._salience is None or self._salience[0] != self.state.seq:
                scores = compute_salience(self.graph, self.adjacency)
                self._salience = (self.state.seq, scores)
            return self._salience[1]

    def salience_of(
        self, node_ids: Sequence[str], *, at_least: float | None = None, budget: int = 256
    ) -> dict[str, LocalSalience]:
        """Salience of a few nodes from what leans on them only
        (:func:`~graph.algorithms.salience_local.local_salience`): what the guardrail gate
        reads after every write, instead of a whole-graph PageRank. A node with more than
        ``budget`` ancestors whose lower bound already exceeds ``at_least`` gets that bound
        (``exact=False``); every other score is exact."""
        with self._lock:
            return {
                node_id: local_salience(self.graph, node_id, budget=budget, at_least=at_least)
                for node_id in sorted(set(node_ids))
            }

    def _reset_derived(self) -> None:
        self._salience = None

    # -- writes ----------------------------------------------------------------------------
    def record(
        self,
        draft: DecisionDraft,
        actor: str,
        edges: Sequence[EdgeDraft] = (),
        note: Mapping[str, Any] | None = None,
    ) -> Node:
        """Record a decision (optionally with edges from/to it, applied atomically).

        ``note`` is kept in the event for the audit trail (e.g. a guardrail override and its
        reason); replay ignores it.
        """
        with self.writing():
            now = self._clock()
            created = draft.created_at or now
            fields = {  # the draft's own values: nested models stay models
                k: v for k, v in draft if k not in {"review_in", "review_by", "created_at", "id"}
            }
            fields.update(
                id=self._new_id(draft.id),
                kind=NodeKind.DECISION,
                created_at=created,
                review_by=draft.review_deadline(created),
                recorded_by=actor,
            )
            node = _trusted_node(fields, actor)
            links = self._edges(edges, actor, now)
            payload = {"node": _node_payload(node), "edges": _edge_payloads(links)}
            if note:
                payload["note"] = dict(note)
            self._commit(Operation.RECORD, payload, actor, now=now, parsed=(node, links))
            return node

    def remember(self, draft: MemoryDraft, actor: str, edges: Sequence[EdgeDraft] = ()) -> Node:
        """Store a memory item (observation, fact or thought)."""
        with self.writing():
            now = self._clock()
            fields = {k: v for k, v in draft if k != "id"}
            fields.update(
                id=self._new_id(draft.id),
                created_at=now,
                occurred_at=draft.occurred_at or now,
                recorded_by=actor,
            )
            node = _trusted_node(fields, actor)
            links = self._edges(edges, actor, now)
            payload = {"node": _node_payload(node), "edges": _edge_payloads(links)}
            self._commit(Operation.REMEMBER, payload, actor, now=now, parsed=(node, links))
            return node

    def update(
        self,
        node_id: str,
        changes: Mapping[str, Any],
        actor: str,
        expected_version: int | None = None,
        note: Mapping[str, Any] | None = None,
    ) -> Node:
        """Change updatable fields; the payload logged is the normalised form of ``changes``.

        ``note`` is kept in the event for the audit trail (e.g. a guardrail override); replay
        ignores it.
        """
        with self.writing():
            current = self.get(node_id)
            unknown = sorted(set(changes) - UPDATABLE_FIELDS)
            if unknown:
                raise ValidationError(f"changes.{unknown[0]}", "is not an updatable field")
            if not changes:
                raise ValidationError("changes", "must name at least one field")
            try:
                merged = Node.model_validate({**current.model_dump(), **changes})
            except pydantic.ValidationError as exc:
                raise model_error(exc, "changes.") from None
            normal = merged.model_dump(mode="json", include=set(changes))
            payload: dict[str, Any] = {"id": node_id, "changes": normal}
            if note:
                payload["note"] = dict(note)
            self._commit(Operation.UPDATE, payload, actor, expected_version)
            return self.get(node_id)

    def review(
        self,
        node_id: str,
        outcome: Outcome | str,
        actor: str,
        *,
        actual_result: str | None = None,
        lessons: str | None = None,
        notes: str | None = None,
        affected_kpis: Mapping[str, float] | None = None,
        expected_version: int | None = None,
    ) -> Node:
        """Record a decision's outcome; the node is ``reviewed`` at once."""
        with self.writing():
            self.get(node_id)
            try:
                value = Outcome(outcome).value
            except ValueError:
                allowed = ", ".join(o.value for o in Outcome)
                raise ValidationError("outcome", f"{outcome!r} is not one of: {allowed}") from None
            payload = {
                "id": node_id,
                "outcome": value,
                "actual_result": actual_result,
                "lessons": lessons,
                "notes": notes,
                "affected_kpis": dict(affected_kpis) if affected_kpis else None,
            }
            payload = {k: v for k, v in payload.items() if v is not None}
            self._commit(Operation.REVIEW, payload, actor, expected_version)
            return self.get(node_id)

    def set_lifecycle(
        self,
        node_id: str,
        lifecycle: Lifecycle | str,
        actor: str,
        *,
        reason: str | None = None,
        expected_version: int | None = None,
        note: Mapping[str, Any] | None = None,
    ) -> Node:
        """Move a decision to proposed, accepted or rejected (superseding is :meth:`supersede`).

        ``note`` is kept in the event for the audit trail (e.g. a guardrail override); replay
        ignores it.
        """
        with self.writing():
            self.get(node_id)
            allowed = {Lifecycle.PROPOSED.value, Lifecycle.ACCEPTED.value, Lifecycle.REJECTED.value}
            if lifecycle not in allowed:
                raise ValidationError(
                    "lifecycle", f"{lifecycle!r} is not one of: {sorted(allowed)}"
                )
            payload: dict[str, Any] = {"id": node_id, "lifecycle": str(lifecycle)}
            if reason:
                payload["reason"] = reason
            if note:
                payload["note"] = dict(note)
            self._commit(Operation.SET_LIFECYCLE, payload, actor, expected_version)
            return self.get(node_id)

    def link(
        self,
        source: str,
        target: str,
        edge_type: EdgeType | str,
        actor: str,
        *,
        weight: float = 1.0,
        context: str | None = None,
    ) -> LinkResult:
        """Create ``source <edge_type> target``; linking an existing edge again changes nothing."""
        draft = EdgeDraft(source, target, edge_type, weight, context)
        with self.writing():
            created = self.link_many([draft], actor)
            if created:
                return LinkResult(created[0], True)
            key = str(EdgeType(edge_type))
            stored = self.graph.get_edge_data(source, target, key=key)
            if stored is None:  # a symmetric edge first linked from the other end
                stored = self.graph.get_edge_data(target, source, key=key)
            return LinkResult(Edge.from_attrs(source, target, key, stored), False)

    def link_many(self, edges: Sequence[EdgeDraft], actor: str) -> list[Edge]:
        """Create several edges in one atomic event; existing ones are skipped. Returns the new."""
        with self.writing():
            now = self._clock()
            payload = self._edges_payload(edges, actor, now)
            fresh = [e for e in payload if not self._edge_exists(e)]
            if not fresh:
                return []
            self._commit(Operation.LINK, {"edges": fresh}, actor, now=now)
            return [Edge.model_validate(e) for e in fresh]

    def unlink(
        self, source: str, target: str, actor: str, edge_type: EdgeType | str | None = None
    ) -> None:
        """Remove the ``edge_type`` edge between the two, or every edge between them."""
        with self.writing():
            payload = {
                "source": source,
                "target": target,
                "type": None if edge_type is None else str(edge_type),
            }
            self._commit(Operation.UNLINK, payload, actor)

    def supersede(self, new_id: str, old_id: str, actor: str, context: str | None = None) -> Edge:
        """Mark ``old_id`` superseded by ``new_id`` (a ``supersedes`` edge new -> old)."""
        with self.writing():
            now = self._clock()
            payload = self._edges_payload(
                [EdgeDraft(new_id, old_id, EdgeType.SUPERSEDES, 1.0, context)], actor, now
            )
            if self._edge_exists(payload[0]):
                stored = self.graph.get_edge_data(new_id, old_id, key=EdgeType.SUPERSEDES.value)
                return Edge.from_attrs(new_id, old_id, EdgeType.SUPERSEDES.value, stored)
            self._commit(Operation.SUPERSEDE, {"edges": payload}, actor, now=now)
            return Edge.model_validate(payload[0])

    def forget(
        self,
        node_id: str,
        actor: str,
        *,
        reason: str | None = None,
        expected_version: int | None = None,
    ) -> None:
        """Remove a node and every edge touching it; the log keeps its history.

        Derived indexes see the ``forget`` event like any other and drop the node too.
        """
        with self.writing():
            self.get(node_id)
            payload: dict[str, Any] = {"id": node_id}
            if reason:
                payload["reason"] = reason
            self._commit(Operation.FORGET, payload, actor, expected_version)

    def import_graph(
        self,
        nodes: Sequence[Node],
        edges: Sequence[Edge],
        actor: str,
        *,
        note: Mapping[str, Any] | None = None,
        chunk: int = MAX_ITEMS_PER_EVENT,
    ) -> ImportReport:
        """Add exported nodes and edges verbatim, as ``import`` events (see :mod:`graph.restore`).

        The whole document is checked first, so bad input writes nothing; what is already
        stored identically is skipped. ``nodes, edges = read_export(fmt, text)`` reads an export.
        """
        with self.writing():
            plan = plan_import(
                self.graph, self.state.external_ids, nodes, edges, chunk=chunk, note=note
            )
            for payload in plan.payloads:
                self._commit(Operation.IMPORT, payload, actor)
            return plan.report

    # -- internals -------------------------------------------------------------------------
    def append_ledger(self, op: Operation, payload: Mapping[str, Any], actor: str) -> int:
        """Append a ledger event (evidence, a circuit reset): no node or edge changes, the
        chain covers it. ``payload`` must name its ``kind``. Returns the event's seq."""
        if op not in LEDGER_OPERATIONS:
            raise ValidationError("op", f"{op} is not a ledger operation")
        with self.writing():
            return self._commit(op, dict(payload), actor).seq

    def _new_id(self, requested: str | None) -> str:
        if requested is None:
            return self._ids.node_id(self.graph)
        try:
            check_node_id(requested)
        except ValueError as exc:
            raise ValidationError("id", str(exc)) from None
        if requested in self.graph:
            raise DuplicateIdError(requested)
        return requested

    def _edges_payload(
        self, edges: Sequence[EdgeDraft], actor: str, now: datetime
    ) -> list[dict[str, Any]]:
        return _edge_payloads(self._edges(edges, actor, now))

    def _edges(self, edges: Sequence[EdgeDraft], actor: str, now: datetime) -> list[Edge]:
        """The edges to write, validated once (their ends and type are the caller's)."""
        out: list[Edge] = []
        for index, draft in enumerate(edges):
            prefix = "" if len(edges) == 1 else f"edges.{index}."
            try:
                edge = Edge.model_validate(
                    {
                        "source": draft.source,
                        "target": draft.target,
                        "type": draft.type,
                        "weight": draft.weight,
                        "context": draft.context,
                        "origin": draft.origin,
                        "meta": draft.meta,
                        "created_at": now,
                        "created_by": actor,
                    }
                )
            except pydantic.ValidationError as exc:
                raise model_error(exc, prefix) from None
            out.append(edge)
        return out

    def _edge_exists(self, edge: Mapping[str, Any]) -> bool:
        return bool(self.graph.has_edge(edge["source"], edge["target"], edge["type"]))


def _edge_payloads(edges: Sequence[Edge]) -> list[dict[str, Any]]:
    return [edge.model_dump(mode="json", exclude_none=True) for edge in edges]


def _trusted_node(fields: dict[str, Any], actor: str) -> Node:
    """The node from a draft's fields, which its draft model already validated (record and
    remember take drafts): it is not validated a second time. Only what the store itself adds
    is checked here: the id (by ``_new_id``) and the actor, which comes from configuration.
    Replay validates every event in full."""
    if not actor or len(actor) > MAX_SHORT:
        raise ValidationError("actor", f"must be 1 to {MAX_SHORT} characters")
    return Node.model_construct(**{k: v for k, v in fields.items() if v is not None})


def _node_payload(node: Node) -> dict[str, Any]:
    return {"id": node.id, **node.to_attrs()}
