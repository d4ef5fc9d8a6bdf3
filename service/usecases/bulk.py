"""Bulk import: many decisions and memory items through the same gated writes, embedded in
batches.

Every line gets exactly one outcome, counted and reported with its line number
(:class:`ImportReport`); nothing is dropped unreported:

- ``recorded``: written, a new decision or memory item;
- ``updated``: a memory item re-sent under a known id with other values, updated by a logged
  event (:func:`~service.usecases.writes.remember_item`'s rule);
- ``duplicate_id``: its ``externalId`` (or ``id``) names an item already stored, so it is not
  written again. An import never changes a stored decision (``updateDecision`` does, gated);
  the report says whether the stored fields differ from the line's;
- ``identical``: no id, and a stored decision is the same whole record: every field a line can
  state that is stored (statement, context, reasons, tags, pattern, bridge, project, feature,
  pr, entities, confidence, category, stakes, review window) is equal, and the decisions it
  says it contradicts or supersedes are linked so. For a memory item: the same words from the
  same source at the same time, and nothing else it states differs;
- ``refused``: the guardrails or the store refused it (the reason is reported);
- ``invalid``: the line does not parse or validate (the caller that parses reports it);
- ``not_reached``: after an ``abort``, the lines that were not attempted.

A statement shared with stored decisions is no duplicate: the same words with another context,
date or author are another decision. Every decision passes the guardrails like a
``recordDecision`` unless the caller skips them explicitly (the reason is kept in each event).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx

from graph.canonical import canonical_json
from graph.drafts import DecisionFields, MemoryDraft, parse_review_in
from graph.enums import EdgeType
from graph.errors import DecigraphError
from graph.model import Edge, Node
from graph.restore import ImportReport as RestoreReport
from graph.store import DecisionStore
from retrieval.matrix import Vector

from .context import Decigraph
from .inputs import RecordDecision
from .prefetch import EmbedAhead, Pending
from .writes import embedding_texts, record_decision, remember_item

BATCH = 64
Item = RecordDecision | MemoryDraft
Outcome = Literal[
    "recorded", "updated", "duplicate_id", "identical", "refused", "invalid", "not_reached"
]
OUTCOMES: tuple[Outcome, ...] = (
    "recorded",
    "updated",
    "duplicate_id",
    "identical",
    "refused",
    "invalid",
    "not_reached",
)
#: The stored fields a decision line states: what makes two records the same whole record.
RECORD_FIELDS = set(DecisionFields.model_fields) - {"id", "review_in"}
_WIRE = {"duplicate_id": "duplicateId", "not_reached": "notReached"}


@dataclass
class ImportReport:
    """How many lines got each outcome, and every line's outcome (``lines``, by line number).

    ``errors`` repeats the refused and invalid lines as ``{"line", "error"}``.
    """

    read: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    lines: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    aborted: bool = False

    def note(self, line: int, outcome: Outcome, reason: str | None = None, **detail: Any) -> None:
        self.counts[outcome] += 1
        entry: dict[str, Any] = {"line": line, "outcome": outcome, **detail}
        if reason is not None:
            entry["reason"] = reason
        self.lines.append(entry)
        if outcome in ("refused", "invalid"):
            self.errors.append({"line": line, "error": reason})

    @property
    def recorded(self) -> int:
        return self.counts["recorded"]

    @property
    def accounted(self) -> int:
        """Lines with an outcome (equals ``read`` once the import is done)."""
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            **{_WIRE.get(name, name): self.counts[name] for name in OUTCOMES},
            "lines": sorted(self.lines, key=lambda e: int(e["line"])),
            "errors": sorted(self.errors, key=lambda e: int(e["line"])),
            "aborted": self.aborted,
        }


def _texts(item: Item) -> list[str]:
    """What the write embeds for ``item``: its stored text (for a decision, the statement with
    its context and pattern; the gate reads statements, not vectors)."""
    if isinstance(item, MemoryDraft):
        return [item.text]
    return [embedding_texts(item.text, item.context, item.pattern)[0]]


def _record_key(fields: Mapping[str, Any], review_seconds: float | None) -> bytes:
    values = {k: v for k, v in fields.items() if v is not None and v != []}
    return canonical_json({**values, "review": review_seconds})


def line_key(item: RecordDecision) -> bytes:
    """The record a decision line would store, as comparable bytes (links aside)."""
    review = parse_review_in(item.review_in).total_seconds() if item.review_in else None
    return _record_key(item.model_dump(mode="json", include=RECORD_FIELDS), review)


def stored_key(node: Node) -> bytes:
    """:func:`line_key` of a stored decision."""
    review = (node.review_by - node.created_at).total_seconds() if node.review_by else None
    return _record_key(node.model_dump(mode="json", include=RECORD_FIELDS), review)


class _Stored:
    """The stored decisions an import compares its lines with, keyed lazily by statement."""

    def __init__(self, store: DecisionStore) -> None:
        self.store = store
        self._unkeyed: dict[str, list[str]] = {}
        with store.lock:
            for node_id, attrs in store.graph.nodes(data=True):
                if attrs.get("kind", "decision") == "decision":
                    self._unkeyed.setdefault(str(attrs["text"]), []).append(node_id)
        self._keys: dict[bytes, list[str]] = {}

    def _key(self, text: str) -> None:
        for node_id in self._unkeyed.pop(text, []):
            if node_id in self.store.graph:
                key = stored_key(self.store.get(node_id))
                self._keys.setdefault(key, []).append(node_id)

    def identical(self, item: RecordDecision) -> str | None:
        """A stored decision that is ``item``'s whole record, links included."""
        self._key(item.text)
        G = self.store.graph
        for node_id in self._keys.get(line_key(item), []):
            if node_id in G and _links_hold(G, node_id, item):
                return node_id
        return None

    def differs(self, node_id: str, item: RecordDecision) -> bool:
        return stored_key(self.store.get(node_id)) != line_key(item)

    def add(self, node_id: str, item: RecordDecision) -> None:
        self._key(item.text)
        self._keys.setdefault(line_key(item), []).append(node_id)


def _links_hold(G: nx.MultiDiGraph[str], node_id: str, item: RecordDecision) -> bool:
    wanted = [(t, EdgeType.CONTRADICTS) for t in item.contradicts]
    wanted += [(t, EdgeType.SUPERSEDES) for t in item.supersedes]
    return all(G.has_edge(node_id, target, kind.value) for target, kind in wanted)


def _classify(app: Decigraph, stored: _Stored, item: Item) -> tuple[Outcome, dict[str, Any]] | None:
    """The outcome of a line that is not to be written (``None`` when it is to be written)."""
    G = app.store.graph
    if item.external_id is not None:
        found = app.store.find_external(item.external_id)
        if found is not None:
            if isinstance(item, MemoryDraft):
                return None  # remember decides: an identical re-send, or a logged update
            return "duplicate_id", _duplicate(
                stored, found, item, f"externalId {item.external_id!r}"
            )
    if item.id is not None and item.id in G:
        if isinstance(item, MemoryDraft):
            return "duplicate_id", {"id": item.id, "reason": f"id {item.id!r} is stored"}
        return "duplicate_id", _duplicate(stored, item.id, item, f"id {item.id!r}")
    if isinstance(item, RecordDecision) and item.id is None and item.external_id is None:
        same = stored.identical(item)
        if same is not None:
            return "identical", {"id": same, "reason": f"the same record is stored as {same!r}"}
    return None


def _duplicate(stored: _Stored, node_id: str, item: RecordDecision, name: str) -> dict[str, Any]:
    differs = stored.differs(node_id, item)
    reason = f"{name} names stored {node_id!r}"
    if differs:
        reason += " (its stored fields differ; an import does not change them: updateDecision)"
    return {"id": node_id, "differs": differs, "reason": reason}


def import_items(
    app: Decigraph,
    items: Sequence[tuple[int, Item]],
    actor: str,
    report: ImportReport,
    *,
    on_error: Literal["skip", "abort"] = "skip",
    skip_guardrails: str | None = None,
    progress: Callable[[ImportReport], None] | None = None,
) -> ImportReport:
    """Write ``(line number, item)`` pairs in order, embedding each batch in one model call.

    Lines that will not be written (by id or identical) are found before the batch is embedded,
    and again before the batch and each write (an earlier line may have stored them). The next
    batch is embedded in a worker while this one is written (:mod:`.prefetch`): its lines are
    judged on the graph before this batch's writes, so a line that this batch makes a duplicate
    is embedded for nothing, and still reported as the duplicate it is when its turn comes.
    """
    stored = _Stored(app.store)
    chunks = [items[start : start + BATCH] for start in range(0, len(items), BATCH)]
    ahead = app.settings.import_pipeline
    with EmbedAhead(app.index.embed, ahead) as embedder:
        upcoming = _embed_batch(app, stored, chunks[0], embedder) if chunks else None
        for k, chunk in enumerate(chunks):
            assert upcoming is not None
            current, upcoming = upcoming, None
            if ahead and k + 1 < len(chunks):
                upcoming = _embed_batch(app, stored, chunks[k + 1], embedder)
            todo: list[tuple[int, Item]] = []
            for number, item in chunk:
                known = _classify(app, stored, item)
                if known is None:
                    todo.append((number, item))
                else:
                    report.note(number, known[0], **known[1])
            vectors = current.vectors()
            for index, (number, item) in enumerate(todo):
                group = vectors.get(number)
                if group is None:  # stored when its batch was embedded, gone since: embed now
                    group = app.index.embed(_texts(item))
                written = _write(app, stored, number, item, group, actor, report, skip_guardrails)
                if not written and on_error == "abort":
                    report.aborted = True
                    end = sum(len(c) for c in chunks[: k + 1])
                    for later, _ in [*todo[index + 1 :], *items[end:]]:
                        report.note(later, "not_reached")
                    if upcoming is not None:
                        upcoming.cancel()
                    app.index.flush()
                    return report
            if not ahead and k + 1 < len(chunks):
                upcoming = _embed_batch(app, stored, chunks[k + 1], embedder)
            if progress is not None:
                progress(report)
    app.index.flush()
    return report


@dataclass
class _Batch:
    """The lines of a batch that need vectors (by line number: their texts), being embedded."""

    wanted: dict[int, list[str]]
    pending: Pending[Vector]

    def vectors(self) -> dict[int, list[Vector]]:
        flat = self.pending.result()
        out: dict[int, list[Vector]] = {}
        at = 0
        for number, texts in self.wanted.items():
            out[number] = flat[at : at + len(texts)]
            at += len(texts)
        return out

    def cancel(self) -> None:
        self.pending.cancel()


def _embed_batch(
    app: Decigraph, stored: _Stored, chunk: Sequence[tuple[int, Item]], embedder: EmbedAhead[Vector]
) -> _Batch:
    """Start embedding what ``chunk``'s lines to be written need, in one model call."""
    wanted = {
        number: _texts(item) for number, item in chunk if _classify(app, stored, item) is None
    }
    return _Batch(wanted, embedder.submit([t for group in wanted.values() for t in group]))


def _write(
    app: Decigraph,
    stored: _Stored,
    number: int,
    item: Item,
    vectors: Sequence[Any],
    actor: str,
    report: ImportReport,
    skip_guardrails: str | None,
) -> bool:
    """Write one line (or note why not); ``False`` when it was refused."""
    known = _classify(app, stored, item)
    if known is not None:
        report.note(number, known[0], **known[1])
        return True
    try:
        if isinstance(item, MemoryDraft):
            made = remember_item(app, item, actor, vectors[0])
            if made.created:
                report.note(number, "recorded", id=made.node.id)
            elif made.updated:
                report.note(number, "updated", id=made.node.id, fields=made.updated)
            else:
                outcome: Outcome = "duplicate_id" if item.external_id else "identical"
                report.note(number, outcome, id=made.node.id, reason="already stored as sent")
            return True
        recorded = record_decision(
            app, item, actor, vector=vectors[0], skip_guardrails=skip_guardrails
        )
    except DecigraphError as exc:
        report.note(number, "refused", str(exc))
        return False
    stored.add(recorded.node.id, item)
    detail: dict[str, Any] = {"id": recorded.node.id}
    if recorded.verdict.conflicts:  # written; each raised pair kept as a suspected contradiction
        detail["suspected"] = [c.target for c in recorded.verdict.conflicts]
    report.note(number, "recorded", **detail)
    return True


def restore_export(
    store: DecisionStore,
    nodes: Sequence[Node],
    edges: Sequence[Edge],
    actor: str,
    *,
    note: Mapping[str, Any] | None = None,
) -> RestoreReport:
    """Add an export's nodes and edges verbatim (ids, versions, edges) as ``import`` events.

    Works on the store alone (the indexes catch up when they are next opened): an export is
    a copy of decisions that were already judged, so it is not gated again. What is already
    stored identically is skipped; bad input writes nothing.
    """
    return store.import_graph(nodes, edges, actor, note=note)
