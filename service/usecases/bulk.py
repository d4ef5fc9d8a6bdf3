"""Bulk import: many decisions and memory items through the same gated writes, embedded in
batches.

Items are idempotent: one whose external id, or (without one) whose content, is already stored
is skipped. Every decision passes the guardrails like a ``recordDecision`` unless the caller
skips them explicitly (the reason is kept in each event). An item that fails is reported with
its line number; with ``abort`` the import stops there (the caller validates every line first,
so a malformed line aborts before anything is written).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from graph.drafts import MemoryDraft
from graph.errors import DecigraphError
from graph.model import Edge, Node
from graph.restore import ImportReport as RestoreReport
from graph.store import DecisionStore

from .context import Decigraph
from .inputs import RecordDecision
from .writes import embedding_texts, record_decision, remember_item

BATCH = 64
Item = RecordDecision | MemoryDraft


@dataclass
class ImportReport:
    read: int = 0
    created: int = 0
    skipped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    aborted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "created": self.created,
            "skipped": self.skipped,
            "errors": self.errors,
            "aborted": self.aborted,
        }


def _texts(item: Item) -> list[str]:
    """What the write embeds for ``item``: for a decision, the stored text and its statement."""
    if isinstance(item, MemoryDraft):
        return [item.text]
    stored, statement = embedding_texts(item.text, item.context, item.pattern)
    return [stored] if stored == statement else [stored, statement]


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
    """Write ``(line number, item)`` pairs in order, embedding each batch in one model call."""
    G = app.store.graph
    with app.store.lock:
        texts = {
            (str(a["text"]), a.get("project"))
            for _, a in G.nodes(data=True)
            if a.get("kind", "decision") == "decision"
        }
    for start in range(0, len(items), BATCH):
        chunk = items[start : start + BATCH]
        wanted = [_texts(item) for _, item in chunk]
        flat = app.index.embed([t for group in wanted for t in group])
        at = 0
        for (number, item), group in zip(chunk, wanted, strict=True):
            vectors = flat[at : at + len(group)]
            at += len(group)
            try:
                if isinstance(item, MemoryDraft):
                    made = remember_item(app, item, actor, vectors[0])
                    report.created += made.created
                    report.skipped += not made.created
                    continue
                key = (item.text, item.project)
                exists = (
                    app.store.find_external(item.external_id) is not None
                    if item.external_id is not None
                    else key in texts
                )
                if exists:
                    report.skipped += 1
                    continue
                pair = (vectors[0], vectors[-1])
                record_decision(app, item, actor, vectors=pair, skip_guardrails=skip_guardrails)
                texts.add(key)
                report.created += 1
            except DecigraphError as exc:
                report.errors.append({"line": number, "error": str(exc)})
                if on_error == "abort":
                    report.aborted = True
                    app.index.flush()
                    return report
        if progress is not None:
            progress(report)
    app.index.flush()
    return report


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
