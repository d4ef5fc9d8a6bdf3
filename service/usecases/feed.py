"""The change feed: the log's events as a list (``cstp.listEvents``) and as a stream
(``GET /events``, :func:`follow`), filtered by operation, node or project.

The log is the feed's only source: every reader reads events by seq from the log
(:meth:`~graph.persistence.LoggedGraph.read_events`, which takes no store lock and never reads
past what this store has applied), so a reader sees the events in seq order, without gaps, at
its own pace; nothing is queued per reader, and a slow reader is never dropped.

Filters (:class:`EventFilter`):

- ``ops``: the event's operation is one of these;
- ``node_id``: the event names that node (:func:`graph.history.node_ids_in`: the node it creates
  or changes, and both ends of every edge it adds or removes). ``listEvents`` finds these
  through the history index (``app.history.seqs_of``) instead of scanning the log;
- ``project``: a node the event names belongs to the project. A node the event's payload
  carries (a record, a remember, an import, an update that sets ``project``) is judged by the
  payload; any other node by its ``project`` in the graph as it stands now. So the later events
  (updates, reviews, links, its ``forget``) of a node forgotten since only match by what their
  payload says, which for most of them is nothing: the record that created it still matches.

A filtered scan is bounded: it stops at ``limit`` matches or after examining
:data:`SCAN_LIMIT` events, and the answer says where it stopped (``nextAfter``), so a client
continues from there: never a silent gap.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from graph.errors import DecigraphError, EventStoreError, ValidationError
from graph.events import Event, Operation
from graph.history import node_ids_in
from graph.model import ShortText
from graph.persistence import LoggedGraph

from .context import Decigraph
from .feed_summaries import summarize
from .inputs import Input, NodeId

MAX_LIMIT = 1000
#: Events a filtered ``listEvents`` examines at most before answering where it stopped.
SCAN_LIMIT = 20_000
#: Events read from the log at a time.
BATCH = 500
#: A stream re-reads the store's seq at least this often (seconds) even if no wake-up came.
FALLBACK_POLL = 1.0


# -- inputs ----------------------------------------------------------------------------------
class FeedFilter(Input):
    """Which events a reader of the feed wants (every one when nothing is set)."""

    ops: list[Operation] | None = Field(default=None, min_length=1, max_length=len(Operation))
    node_id: NodeId | None = None
    project: ShortText | None = Field(default=None, min_length=1)


class ListEvents(FeedFilter):
    """A page of the log (``cstp.listEvents``).

    The window is the events with ``after < seq < before`` (``before`` unset: up to the head).
    ``order="asc"`` returns the oldest ``limit`` matching events of the window, oldest first;
    ``"desc"`` the newest ``limit``, newest first.
    """

    after: int = Field(default=0, ge=0)
    before: int | None = Field(default=None, ge=1)
    limit: int = Field(default=50, ge=1, le=MAX_LIMIT)
    order: Literal["asc", "desc"] = "asc"


# -- filtering -------------------------------------------------------------------------------
@dataclass(frozen=True)
class EventFilter:
    """The matching rule of :class:`FeedFilter` (see the module docstring)."""

    ops: frozenset[Operation] | None = None
    node_id: str | None = None
    project: str | None = None

    @classmethod
    def of(cls, query: FeedFilter) -> EventFilter:
        ops = None if query.ops is None else frozenset(query.ops)
        return cls(ops, query.node_id, query.project)

    @property
    def everything(self) -> bool:
        return self.ops is None and self.node_id is None and self.project is None

    def select(self, store: LoggedGraph, events: Sequence[Event]) -> list[Event]:
        """The events that match, in their order (the project look-ups of a whole batch under
        one short hold of the store lock)."""
        if self.everything:
            return list(events)
        kept = [
            e
            for e in events
            if (self.ops is None or e.op in self.ops)
            and (self.node_id is None or self.node_id in node_ids_in(e))
        ]
        if self.project is None or not kept:
            return kept
        named = [(e, *_named_projects(e)) for e in kept]
        unknown = {i for _, ids, said in named for i in ids if i not in said}
        now = _projects_now(store, unknown)
        return [
            e
            for e, ids, said in named
            if any((said[i] if i in said else now.get(i)) == self.project for i in ids)
        ]


def _named_projects(event: Event) -> tuple[list[str], dict[str, Any]]:
    """The nodes an event names, and the project its payload gives for some of them."""
    payload = event.payload
    said: dict[str, Any] = {}
    nodes = payload.get("nodes")
    carried = [payload.get("node"), *(nodes if isinstance(nodes, list) else [])]
    for node in carried:
        if isinstance(node, dict) and isinstance(node.get("id"), str):
            said[node["id"]] = node.get("project")
    changes = payload.get("changes")
    if event.op is Operation.UPDATE and isinstance(changes, dict) and "project" in changes:
        node_id = payload.get("id")
        if isinstance(node_id, str):
            said[node_id] = changes["project"]
    return node_ids_in(event), said


def _projects_now(store: LoggedGraph, ids: set[str]) -> dict[str, Any]:
    if not ids:
        return {}
    with store.lock:
        G = store.graph
        return {i: G.nodes[i].get("project") for i in ids if i in G}


# -- listEvents ------------------------------------------------------------------------------
@dataclass(frozen=True)
class EventItem:
    seq: int
    id: str
    ts: str
    actor: str
    op: str
    node_ids: tuple[str, ...]
    summary: str

    @classmethod
    def of(cls, event: Event) -> EventItem:
        ids = tuple(node_ids_in(event))
        summary = summarize(event)
        return cls(event.seq, event.id, event.ts, event.actor, event.op.value, ids, summary)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "id": self.id,
            "ts": self.ts,
            "actor": self.actor,
            "op": self.op,
            "nodeIds": list(self.node_ids),
            "summary": self.summary,
        }


@dataclass(frozen=True)
class EventPage:
    """A page of the log.

    ``next_after``: every event of the window up to it was examined; ``asc`` continues with
    ``after=next_after`` (done when it equals ``head``), and after a ``desc`` page it is where
    an ascending reader of newer events starts. ``next_before`` (``desc`` only): every event of
    the window from it up was examined; continue with ``before=next_before`` (``None``: the
    window holds nothing older)."""

    events: list[EventItem]
    head: int
    next_after: int
    order: str
    next_before: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "events": [item.to_dict() for item in self.events],
            "head": self.head,
            "nextAfter": self.next_after,
        }
        if self.order == "desc":
            out["nextBefore"] = self.next_before
        return out


def check_after(app: Decigraph, after: int, field: str = "after") -> int:
    """``after`` if the store has applied it, else a :class:`ValidationError` naming ``field``
    (a seq beyond the head comes from another log, or one this replica has not reached)."""
    head = app.store.seq
    if after > head:
        raise ValidationError(
            field,
            f"{after} is beyond the log's head ({head}): no such event in this log "
            "(yet, for a replica behind its shared log)",
        )
    return after


def list_events(app: Decigraph, query: ListEvents) -> EventPage:
    """A page of the log's events (see :class:`ListEvents` and :class:`EventPage`)."""
    store = app.store
    head = store.seq  # first: the history index below is then built at least this far
    check_after(app, query.after)
    top = head if query.before is None else min(head, query.before - 1)
    flt = EventFilter.of(query)
    if query.node_id is not None:
        seqs = [s for s in app.history.seqs_of(query.node_id) if query.after < s <= top]
        if query.order == "desc":
            seqs.reverse()
        return _page(store, flt, query, head, top, _by_seq(store, seqs), len(seqs))
    return _page(store, flt, query, head, top, _scan(store, query.after, top, query.order))


def _scan(store: LoggedGraph, after: int, top: int, order: str) -> Iterator[list[Event]]:
    """Batches of the window's events in the page's order."""
    if order == "asc":
        first = after + 1
        while first <= top:
            batch = store.read_events(first, top, BATCH)
            if not batch:
                return
            yield batch
            first = batch[-1].seq + 1
    else:
        last = top
        while last > after:
            batch = store.read_events(max(after + 1, last - BATCH + 1), last)
            if not batch:
                return
            yield batch[::-1]
            last = batch[0].seq - 1


def _by_seq(store: LoggedGraph, seqs: list[int]) -> Iterator[list[Event]]:
    """The events at these seqs (a node's, from the history index), in batches."""
    for start in range(0, len(seqs), BATCH):
        yield [e for s in seqs[start : start + BATCH] for e in store.read_events(s, s)]


def _page(
    store: LoggedGraph,
    flt: EventFilter,
    query: ListEvents,
    head: int,
    top: int,
    batches: Iterable[list[Event]],
    candidates: int | None = None,
) -> EventPage:
    """The page from ``batches`` (the window's events in order; ``candidates``: how many
    there are when only those could match, a node's)."""
    found: list[Event] = []
    examined = 0
    low, high = top + 1, query.after  # the examined span, so far none
    complete = True
    for whole in batches:
        batch = whole[: SCAN_LIMIT - examined]
        matched = {e.seq for e in flt.select(store, batch)}
        for event in batch:
            examined += 1
            low, high = min(low, event.seq), max(high, event.seq)
            if event.seq in matched:
                found.append(event)
                if len(found) == query.limit:
                    break
        if len(found) == query.limit or examined >= SCAN_LIMIT:
            complete = examined == candidates  # the last candidate: nothing else can match
            break
    items = [EventItem.of(e) for e in found]
    if query.order == "asc":
        next_after = top if complete else high
        return EventPage(items, head, max(next_after, query.after), "asc")
    next_before = None if complete or low <= query.after + 1 else low
    return EventPage(items, head, max(top, query.after), "desc", next_before)


# -- following -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Batch:
    """Events of the feed, in seq order (the matching ones of the span read)."""

    events: list[Event]


@dataclass(frozen=True)
class Heartbeat:
    """Nothing to send for a while (the stream says it is alive)."""


@dataclass(frozen=True)
class Reset:
    """The store's state was rebuilt from its log (a shared log that diverged from this
    replica): seqs read before may name other events now. The stream ends after it."""

    head: int


@dataclass(frozen=True)
class Failed:
    """The log could not be read (the message says why). The stream ends after it."""

    message: str


FeedItem = Batch | Heartbeat | Reset | Failed


def start_seq(app: Decigraph, after: str | None, last_event_id: str | None) -> int:
    """Where a stream starts: the ``Last-Event-ID`` a reconnecting client sends wins over
    ``after`` (the URL an ``EventSource`` reconnects to still holds the first ``after``). Each
    must be a seq this store has applied (a :class:`ValidationError` naming it otherwise)."""
    for field, raw in (("Last-Event-ID", last_event_id), ("after", after)):
        if raw is None or (field == "Last-Event-ID" and not raw.strip()):
            continue
        text = raw.strip()
        if not text.isdigit() or not text.isascii() or len(text) > 18:
            shown = raw if len(raw) <= 40 else raw[:40] + "..."
            raise ValidationError(field, f"must be a non-negative integer (a seq), not {shown!r}")
        return check_after(app, int(text), field)
    return 0


async def follow(
    app: Decigraph, after: int, flt: EventFilter, heartbeat: float
) -> AsyncIterator[FeedItem]:
    """The events after ``after`` that ``flt`` matches, forever: first the backlog, read from
    the log in batches (in a worker thread, without the store lock), then each new event as it
    is applied (a store listener wakes the stream; the store's seq is looked at least every
    :data:`FALLBACK_POLL` s anyway). A :class:`Heartbeat` after ``heartbeat`` seconds without
    anything to send.

    Guarantees: events in seq order, none skipped, none twice within a stream; a stream resumed
    after the last seq received gets exactly the events after it (at least once across
    reconnects, as a client may not have processed what it last received). It ends on
    :class:`Reset` (the log was rebuilt), on :class:`Failed`, when the hub closes (the server
    stops), or when the consumer stops iterating (the client went away).
    """
    hub = app.feed
    store = app.store
    generation = hub.generation
    waiter = hub.subscribe()
    quiet_since = time.monotonic()
    try:
        while not hub.closed:
            if hub.generation != generation:
                yield Reset(store.seq)
                return
            progressed = False
            if store.seq > after:
                try:
                    last, matched = await asyncio.to_thread(_read, store, flt, after)
                except EventStoreError:  # a shared log out of reach: try again after a wait
                    last, matched = None, []
                except (DecigraphError, OSError) as exc:  # a corrupt log: say so, then end
                    yield Failed(f"{type(exc).__name__}: {exc}")
                    return
                if last is not None:
                    after, progressed = last, True
                    if matched:
                        yield Batch(matched)
                        quiet_since = time.monotonic()
                        continue
            remaining = heartbeat - (time.monotonic() - quiet_since)
            if remaining <= 0:
                yield Heartbeat()
                quiet_since = time.monotonic()
                continue
            if progressed:  # more of the backlog may follow: read on
                continue
            # Caught up (or the log could not be read): until an event is applied, or a while.
            seen = after if store.seq <= after else store.seq
            await waiter.wait(seen, generation, min(remaining, FALLBACK_POLL))
    finally:
        waiter.close()


def _read(store: LoggedGraph, flt: EventFilter, after: int) -> tuple[int | None, list[Event]]:
    """The next batch after ``after``: the last seq read (``None``: none) and the matches."""
    events = store.read_events(after + 1, store.seq, BATCH)
    if not events:
        return None, []
    return events[-1].seq, flt.select(store, events)


def event_json(event: Event) -> bytes:
    """The event as the log holds it: its canonical JSON line, without the newline."""
    return event.to_line().rstrip(b"\n")


def event_filter(
    ops: Sequence[str] = (), node_id: str | None = None, project: str | None = None
) -> EventFilter:
    """An :class:`EventFilter` from loose values (a URL's query), validated as
    :class:`FeedFilter` (:class:`~pydantic.ValidationError` naming the field otherwise)."""
    raw: Mapping[str, Any] = {
        "ops": list(ops) or None,
        "node_id": node_id,
        "project": project,
    }
    return EventFilter.of(FeedFilter.model_validate(raw))
