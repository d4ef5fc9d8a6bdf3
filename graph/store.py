"""The decision store: an event log on disk and the graph materialised from it.

Every change goes through :meth:`DecisionStore._commit`: build the event, validate it against the
current state (nothing written on error), append it durably, then apply it. Reads go to
``store.graph``, a NetworkX ``MultiDiGraph`` that the free functions in
:mod:`graph.algorithms` take as their first argument.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import networkx as nx
import pydantic

from .algorithms.salience import compute_salience
from .drafts import DecisionDraft, EdgeDraft, MemoryDraft
from .enums import EdgeType, Lifecycle, NodeKind, Outcome
from .errors import (
    DecigraphError,
    DuplicateIdError,
    NodeNotFoundError,
    ReadOnlyStoreError,
    ValidationError,
)
from .eventlog import FsyncPolicy, LogWriter, TornTail, read_events
from .events import Event, Operation
from .gcpause import gc_paused
from .ids import IdSource
from .lockfile import DirectoryLock
from .model import Edge, Node, check_node_id
from .restore import MAX_ITEMS_PER_EVENT, ImportReport, plan_import
from .salience import SparseAdjacency
from .snapshot import SnapshotHeader, read_snapshot, write_snapshot
from .state import UPDATABLE_FIELDS, GraphState, graph_hash, model_error
from .timeutil import format_ts, utc_now
from .verification import VerifyReport, verify_log

LOG_NAME = "events.jsonl"
SNAPSHOT_NAME = "snapshot.json"

logger = logging.getLogger(__name__)
Listener = Callable[[Event], None]


@dataclass(frozen=True)
class StoreOptions:
    """How a store is opened.

    ``snapshot_every``: events between automatic snapshots (0 turns them off; one is still
    written on close). ``fsync``: see :mod:`graph.eventlog`. ``use_snapshot=False`` replays the
    whole log (``decigraph rebuild``).
    """

    fsync: FsyncPolicy = "always"
    snapshot_every: int = 10_000
    read_only: bool = False
    use_snapshot: bool = True


@dataclass(frozen=True)
class OpenReport:
    """How the store reached its state at open: from a snapshot plus tail, or a full replay."""

    snapshot_seq: int | None
    replayed: int
    torn_tail: TornTail | None
    torn_saved_to: Path | None


@dataclass(frozen=True)
class LinkResult:
    edge: Edge
    created: bool


class DecisionStore:
    """An event-sourced decision graph in ``data_dir``; use :meth:`open`."""

    def __init__(
        self,
        data_dir: Path,
        options: StoreOptions,
        clock: Callable[[], datetime],
        ids: IdSource,
    ) -> None:
        self.data_dir = data_dir
        self.options = options
        self.log_path = data_dir / LOG_NAME
        self.snapshot_path = data_dir / SNAPSHOT_NAME
        self._clock = clock
        self._ids = ids
        self._lock = threading.RLock()
        self._dir_lock = DirectoryLock(data_dir)
        self._writer: LogWriter | None = None
        self.adjacency = SparseAdjacency()
        self.state = GraphState(self.adjacency)
        self.log_offset = 0
        self.snapshot_seq = 0
        self.listeners: list[Listener] = []
        self._salience: tuple[int, dict[str, float]] | None = None
        self._snapshot_failed_seq = 0
        self.open_report = OpenReport(None, 0, None, None)

    # -- lifecycle -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        data_dir: str | Path,
        options: StoreOptions | None = None,
        *,
        clock: Callable[[], datetime] = utc_now,
        ids: IdSource | None = None,
    ) -> DecisionStore:
        """Open (creating if needed) the store in ``data_dir``: lock, load snapshot, replay tail."""
        options = options or StoreOptions()
        path = Path(data_dir)
        if not options.read_only:
            path.mkdir(parents=True, exist_ok=True)
        store = cls(path, options, clock, ids or IdSource())
        store._load()
        return store

    def _load(self) -> None:
        if not self.options.read_only:
            self._dir_lock.acquire()
        try:
            with gc_paused():
                snapshot_seq, replayed, torn = self._materialise()
            saved: Path | None = None
            if not self.options.read_only:
                self._writer = LogWriter(self.log_path, self.options.fsync)
                if torn is not None:
                    saved = self._writer.cut_torn_tail(torn)
                    logger.warning("cut torn log tail (%s), saved to %s", torn.reason, saved)
            self.open_report = OpenReport(snapshot_seq, replayed, torn, saved)
        except BaseException:
            self._dir_lock.release()
            raise

    def _materialise(self) -> tuple[int | None, int, TornTail | None]:
        snapshot_seq = self._restore_snapshot()
        try:
            replayed, torn = self._replay_tail()
        except DecigraphError as exc:
            if snapshot_seq is None:
                raise
            # The tail does not chain onto the snapshot (e.g. the log was restored from a
            # backup): the log is the source of truth, so rebuild from it alone.
            logger.warning("snapshot disagrees with the log (%s); replaying the whole log", exc)
            self._reset()
            snapshot_seq = None
            replayed, torn = self._replay_tail()
        return snapshot_seq, replayed, torn

    def _restore_snapshot(self) -> int | None:
        loaded = read_snapshot(self.snapshot_path) if self.options.use_snapshot else None
        if loaded is None:
            return None
        header, G = loaded
        if not self.log_path.exists() or self.log_path.stat().st_size < header.log_offset:
            logger.warning("snapshot is ahead of the log; ignoring it")
            return None
        self.state.graph = G
        self.state.seq = header.seq
        self.state.last_hash = header.last_hash
        self.state.external_ids = {
            attrs["external_id"]: node_id
            for node_id, attrs in G.nodes(data=True)
            if "external_id" in attrs
        }
        self.adjacency = SparseAdjacency.from_graph(G)
        self.state.mirror = self.adjacency
        self.log_offset = header.log_offset
        self.snapshot_seq = header.seq
        return header.seq

    def _replay_tail(self, notify: bool = False) -> tuple[int, TornTail | None]:
        count = 0
        for item in read_events(
            self.log_path, self.log_offset, self.state.last_hash, self.state.seq + 1
        ):
            if isinstance(item, TornTail):
                return count, item
            self.state.apply(item.event)
            self.log_offset = item.end_offset
            count += 1
            if notify:
                self._notify(item.event)
        return count, None

    def _reset(self) -> None:
        self.adjacency = SparseAdjacency()
        self.state = GraphState(self.adjacency)
        self.log_offset = 0
        self.snapshot_seq = 0

    def refresh(self) -> int:
        """Read-only stores: apply events appended by the writer since; return how many.

        Listeners hear each applied event, as they would have heard the writer's commits, so
        indexes built over a read-only store follow the writer too.
        """
        with self._lock:
            count, _ = self._replay_tail(notify=True)
            return count

    def close(self) -> None:
        with self._lock:
            try:
                if self._writer is not None and self.state.seq > self.snapshot_seq:
                    self.write_snapshot()
            except OSError as exc:  # e.g. a full disk: the next open replays the log instead
                logger.warning("could not write a snapshot on close (%s); the log is intact", exc)
            finally:
                if self._writer is not None:
                    self._writer.close()
                    self._writer = None
                self._dir_lock.release()

    def __enter__(self) -> DecisionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- reads -----------------------------------------------------------------------------
    @property
    def graph(self) -> nx.MultiDiGraph[str]:
        return self.state.graph

    @property
    def seq(self) -> int:
        return self.state.seq

    @property
    def lock(self) -> threading.RLock:
        """Held during every write; hold it to read a consistent multi-step view."""
        return self._lock

    def get(self, node_id: str) -> Node:
        if node_id not in self.graph:
            raise NodeNotFoundError(node_id)
        return Node.from_attrs(node_id, self.graph.nodes[node_id])

    def find_external(self, external_id: str) -> str | None:
        return self.state.external_ids.get(external_id)

    def graph_hash(self) -> str:
        return graph_hash(self.graph)

    def now(self) -> datetime:
        """A reading of the store's clock (what the next event would be stamped with)."""
        return self._clock()

    def allocate_id(self) -> str:
        """A fresh node id; hold :attr:`lock` until the node using it is written."""
        with self._lock:
            return self._ids.node_id(self.graph)

    def salience(self) -> dict[str, float]:
        """PageRank salience of every node, recomputed only when the graph has changed."""
        with self._lock:
            if self._salience is None or self._salience[0] != self.state.seq:
                scores = compute_salience(self.graph, self.adjacency)
                self._salience = (self.state.seq, scores)
            return self._salience[1]

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
        with self._lock:
            now = self._clock()
            created = draft.created_at or now
            fields = draft.model_dump(exclude={"review_in", "review_by", "created_at", "id"})
            fields.update(
                id=self._new_id(draft.id),
                kind=NodeKind.DECISION,
                created_at=created,
                review_by=draft.review_deadline(created),
                recorded_by=actor,
            )
            node = _build_node(fields)
            payload = {"node": _node_payload(node), "edges": self._edges_payload(edges, actor, now)}
            if note:
                payload["note"] = dict(note)
            self._commit(Operation.RECORD, payload, actor, now=now)
            return self.get(node.id)

    def remember(self, draft: MemoryDraft, actor: str, edges: Sequence[EdgeDraft] = ()) -> Node:
        """Store a memory item (observation, fact or thought)."""
        with self._lock:
            now = self._clock()
            fields = draft.model_dump(exclude={"id"})
            fields.update(
                id=self._new_id(draft.id),
                created_at=now,
                occurred_at=draft.occurred_at or now,
                recorded_by=actor,
            )
            node = _build_node(fields)
            payload = {"node": _node_payload(node), "edges": self._edges_payload(edges, actor, now)}
            self._commit(Operation.REMEMBER, payload, actor, now=now)
            return self.get(node.id)

    def update(
        self,
        node_id: str,
        changes: Mapping[str, Any],
        actor: str,
        expected_version: int | None = None,
    ) -> Node:
        """Change updatable fields; the payload logged is the normalised form of ``changes``."""
        with self._lock:
            current = self.get(node_id)
            unknown = sorted(set(changes) - UPDATABLE_FIELDS)
            if unknown:
                raise ValidationError(f"updates.{unknown[0]}", "is not an updatable field")
            if not changes:
                raise ValidationError("updates", "must name at least one field")
            try:
                merged = Node.model_validate({**current.model_dump(), **changes})
            except pydantic.ValidationError as exc:
                raise model_error(exc, "updates.") from None
            normal = merged.model_dump(mode="json", include=set(changes))
            payload = {"id": node_id, "changes": normal}
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
        expected_version: int | None = None,
    ) -> Node:
        """Record a decision's outcome; the node is ``reviewed`` at once."""
        with self._lock:
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
    ) -> Node:
        """Move a decision to proposed, accepted or rejected (superseding is :meth:`supersede`)."""
        with self._lock:
            self.get(node_id)
            allowed = {Lifecycle.PROPOSED.value, Lifecycle.ACCEPTED.value, Lifecycle.REJECTED.value}
            if lifecycle not in allowed:
                raise ValidationError(
                    "lifecycle", f"{lifecycle!r} is not one of: {sorted(allowed)}"
                )
            payload: dict[str, Any] = {"id": node_id, "lifecycle": str(lifecycle)}
            if reason:
                payload["reason"] = reason
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
        with self._lock:
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
        with self._lock:
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
        with self._lock:
            payload = {
                "source": source,
                "target": target,
                "type": None if edge_type is None else str(edge_type),
            }
            self._commit(Operation.UNLINK, payload, actor)

    def supersede(self, new_id: str, old_id: str, actor: str, context: str | None = None) -> Edge:
        """Mark ``old_id`` superseded by ``new_id`` (a ``supersedes`` edge new -> old)."""
        with self._lock:
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
        with self._lock:
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
        with self._lock:
            plan = plan_import(
                self.graph, self.state.external_ids, nodes, edges, chunk=chunk, note=note
            )
            for payload in plan.payloads:
                self._commit(Operation.IMPORT, payload, actor)
            return plan.report

    # -- internals -------------------------------------------------------------------------
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
        out: list[dict[str, Any]] = []
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
            out.append(edge.model_dump(mode="json", exclude_none=True))
        return out

    def _edge_exists(self, edge: Mapping[str, Any]) -> bool:
        return bool(self.graph.has_edge(edge["source"], edge["target"], edge["type"]))

    def _commit(
        self,
        op: Operation,
        payload: dict[str, Any],
        actor: str,
        expected_version: int | None = None,
        *,
        now: datetime | None = None,
    ) -> Event:
        if self._writer is None:
            raise ReadOnlyStoreError(str(self.data_dir))
        event = Event.create(
            seq=self.state.seq + 1,
            event_id=self._ids.event_id(),
            ts=format_ts(now or self._clock()),
            actor=actor,
            op=op,
            payload=payload,
            prev=self.state.last_hash,
            expected_version=expected_version,
        )
        apply = self.state.plan(event)
        self.log_offset = self._writer.append(event.to_line())
        apply()
        self._notify(event)
        every = self.options.snapshot_every
        if every and self.state.seq - max(self.snapshot_seq, self._snapshot_failed_seq) >= every:
            # The event is durable and applied: a snapshot is only a start-up shortcut, so
            # failing to write one (e.g. a full disk) must not turn this write into an error.
            try:
                self.write_snapshot()
            except OSError as exc:
                self._snapshot_failed_seq = self.state.seq  # retry after another `every`
                logger.warning("could not write a snapshot (%s); the log is intact", exc)
        return event

    def _notify(self, event: Event) -> None:
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:  # a derived index must never undo a durable write
                logger.exception("listener failed on event %s", event.seq)

    def write_snapshot(self) -> None:
        with self._lock:
            header = SnapshotHeader(self.state.seq, self.log_offset, self.state.last_hash)
            try:
                with gc_paused():
                    write_snapshot(self.snapshot_path, self.graph, header)
            except OSError:
                # Give back the space a half-written temporary file holds (the old snapshot,
                # if any, is untouched: the new one only replaces it once complete).
                tmp = self.snapshot_path.with_name(self.snapshot_path.name + ".tmp")
                tmp.unlink(missing_ok=True)
                raise
            self.snapshot_seq = self.state.seq

    def verify(self) -> VerifyReport:
        """Re-read the whole log, check the hash chain, replay it and compare with this graph."""
        with self._lock:
            return verify_log(self.log_path, self.state.seq, self.graph)


def _build_node(fields: dict[str, Any]) -> Node:
    try:
        return Node.model_validate({k: v for k, v in fields.items() if v is not None})
    except pydantic.ValidationError as exc:
        raise model_error(exc) from None


def _node_payload(node: Node) -> dict[str, Any]:
    return {"id": node.id, **node.to_attrs()}
