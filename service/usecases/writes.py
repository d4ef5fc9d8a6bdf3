"""The write use cases: one function per change a user makes.

Each takes validated input (:mod:`.inputs`) and the caller's identity (``actor``, the agent the
token maps to) and returns a typed result. Writes that can create a contradiction run the gate
and the append in one critical section: the stored text is embedded first, once, outside any
lock (the gate's contradiction pass reads statements, not vectors; auto-edges and the vector
index reuse that one vector), then, under the store lock, the guardrails judge the graph as it
is and the event is appended before any other write can change it. A write that changes no
embedded field (an update of confidence, tags, stakes...) embeds nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pydantic

from graph.algorithms.walk import edge_signal
from graph.drafts import DecisionDraft, EdgeDraft, MemoryDraft
from graph.enums import EdgeType
from graph.errors import ValidationError
from graph.model import Edge, Node
from graph.store import LinkResult
from retrieval.autoedges import Suggestion, semantic_neighbours
from retrieval.contradiction.tiers import SUSPECTED, compatible_edge, suspected_edge
from retrieval.matrix import Vector
from retrieval.text import compose_embedding_text
from retrieval.writes import WriteResult, record, remember

from .context import Decigraph
from .gate import (
    Judgement,
    candidate,
    judge,
    prejudge,
    require_targets,
)
from .inputs import (
    EMBEDDED_CHANGES,
    GATED_CHANGES,
    LinkDecisions,
    Override,
    RecordDecision,
    ReviewDecision,
    UnlinkDecisions,
    UpdateDecision,
)
from .rules import GuardrailBlockedError, Verdict

#: One scanning thread: writes hold the store lock while they scan, so one is never waiting.
_SCANS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decigraph-scan")


@dataclass
class Recorded:
    """A recorded decision: the node, the edges written with it, what is left to confirm, and
    the guardrail verdict it passed (warnings, or the violations an override overrode)."""

    node: Node
    edges: list[Edge]
    suggestions: list[Suggestion]
    verdict: Verdict
    overridden: bool = False


@dataclass
class Updated:
    node: Node
    fields: list[str]
    verdict: Verdict | None = None
    overridden: bool = False


@dataclass
class Remembered:
    """A memory item: ``created`` when new; ``updated`` names the fields a re-send changed."""

    node: Node
    created: bool
    edges: list[Edge] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)


def admit(verdict: Verdict, override: Override | None) -> dict[str, Any] | None:
    """The audit note a write carries, or :class:`GuardrailBlockedError` when blocked."""
    if verdict.allowed:
        return None
    if override is None:
        raise GuardrailBlockedError(verdict)
    return {
        "guardrailOverride": {
            "reason": override.reason,
            "violations": [v.to_dict() for v in verdict.violations],
        }
    }


def merge_notes(*notes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The event's note from its parts (an override, the judgement); None when all are."""
    merged: dict[str, Any] = {}
    for part in notes:
        merged.update(part or {})
    return merged or None


def rule_view(cmd: RecordDecision) -> dict[str, Any]:
    """The fields guardrail rules read for a decision to record (its JSON form)."""
    return cmd.model_dump(mode="json", exclude_none=True, exclude={"override", "compatible_with"})


def draft_view(draft: DecisionDraft) -> dict[str, Any]:
    """The fields guardrail rules read for a trusted writer's draft."""
    return draft.model_dump(
        mode="json", exclude_none=True, exclude={"created_at", "review_by", "lifecycle"}
    )


def embedding_texts(text: str, context: str | None, pattern: str | None) -> tuple[str, str]:
    """What a decision's write embeds: its stored text (statement with context and pattern)
    and its statement alone (what contradictions are judged on); often the same text."""
    return compose_embedding_text(text, context, pattern), text


def embed_pair(app: Decigraph, stored: str, statement: str) -> tuple[Vector, Vector]:
    """The vectors of :func:`embedding_texts`, in one call to the model (one text when equal)."""
    if stored == statement:
        vector = app.index.embed([stored])[0]
        return vector, vector
    stored_vector, statement_vector = app.index.embed([stored, statement])
    return stored_vector, statement_vector


def embed_decision(app: Decigraph, draft: DecisionDraft) -> tuple[Vector, Vector]:
    """The stored embedding and the statement's own, for a decision to record."""
    return embed_pair(app, *embedding_texts(draft.text, draft.context, draft.pattern))


def record_decision(
    app: Decigraph,
    cmd: RecordDecision,
    actor: str,
    *,
    draft: DecisionDraft | None = None,
    vector: Vector | None = None,
    skip_guardrails: str | None = None,
    rule_fields: Mapping[str, Any] | None = None,
    links: Sequence[tuple[str, EdgeType]] = (),
) -> Recorded:
    """Record a decision: gate and append in one critical section.

    ``draft`` replaces ``cmd.draft()`` for trusted writers (import, sample) that also set
    ``created_at`` or ``lifecycle``; ``vector`` is the stored text's embedding, when the
    caller embedded it already (a bulk writer, in batches). ``skip_guardrails`` (a reason)
    records without the gate, and the event says so. ``rule_fields`` are what the rules read
    when the caller judged a richer form of the decision (``preAction``'s action, whose
    context may be an object). ``links``
    are further ``(target, type)`` edges from the new decision that trusted writers add.
    """
    if rule_fields is None:
        rule_fields = rule_view(cmd) if draft is None else draft_view(draft)
    draft = draft or cmd.draft()
    if vector is not None:
        stored_vector = vector
    else:  # the only embedding a record needs (the gate reads statements, not vectors)
        stored_vector = app.index.embed(
            [embedding_texts(draft.text, draft.context, draft.pattern)[0]]
        )[0]
    cand = candidate(
        rule_fields,
        contradicts=cmd.contradicts,
        supersedes=cmd.supersedes,
        compatible_with=cmd.compatible_with,
        vector=stored_vector,
    )
    edges = [(t, EdgeType.CONTRADICTS) for t in cmd.contradicts]
    edges += [(t, EdgeType.SUPERSEDES) for t in cmd.supersedes]
    edges += links
    if skip_guardrails is None:
        prejudge(app, cand)  # the judge's network runs here, before the lock
    with app.store.writing():
        # The semantic neighbours (the neighbour pool's sketch scan and rescoring: numpy,
        # without the GIL) are found on another core while the gate judges; both under the
        # lock, so the scan sees exactly the matrix the edges are written against.
        scan = _SCANS.submit(semantic_neighbours, app.index, stored_vector, app.auto_edges)
        try:
            if skip_guardrails is None:
                judged = judge(app, cand, agent=actor)
                note = merge_notes(admit(judged.verdict, cmd.override), judged.note())
                verdict, conflicts = judged.verdict, judged.conflicts
            else:
                require_targets(app, cand)
                note = {"guardrailsSkipped": {"reason": skip_guardrails}}
                verdict, conflicts = Verdict(), []
        finally:
            neighbours = scan.result()  # never let the lock go while the scan reads the matrix
        if app.on_gated is not None:
            app.on_gated()
        result = record(
            app.index,
            draft,
            actor,
            app.auto_edges,
            confirm=cmd.confirm,
            vector=stored_vector,
            note=note,
            links=edges,
            conflicts=conflicts,
            compatible=cmd.compatible_with,
            neighbours=neighbours,
        )
    overridden = note is not None and "guardrailOverride" in note
    return Recorded(result.node, result.edges, result.suggestions, verdict, overridden)


def _stored_text(current: Node, changes: Mapping[str, Any]) -> str:
    """The stored (embedded) text of ``current`` once ``changes`` apply."""
    return embedding_texts(
        str(changes.get("text") or current.text),
        changes.get("context", current.context),
        changes.get("pattern", current.pattern),
    )[0]


def changed_fields(
    current: Node, given: Mapping[str, Any], expected_version: int | None = None
) -> dict[str, Any]:
    """The given changes whose value differs from the stored one (compared in stored form).

    With an ``expected_version`` that is not the current one, every given change is kept, so
    the write reports the conflict instead of passing as a no-op. Changes that do not validate
    are kept too: the store refuses them, naming the field.
    """
    if expected_version is not None and expected_version != current.version:
        return dict(given)
    try:
        after = Node.model_validate({**current.model_dump(), **given})
    except pydantic.ValidationError:
        return dict(given)
    old = current.model_dump(mode="json", include=set(given))
    new = after.model_dump(mode="json", include=set(given))
    return {name: value for name, value in given.items() if old.get(name) != new.get(name)}


def update_decision(app: Decigraph, cmd: UpdateDecision, actor: str) -> Updated:
    """Change a decision's fields; a change of its statement, category or stakes is gated
    exactly like recording the decision as it would then read (the judge reads the statement
    only when it changed). ``compatible_with`` declares decisions compatible with it.

    ``supersedes`` marks the decisions it replaces (edges written with the change, in the same
    critical section; the gate reads them as superseded). Only the fields whose value differs
    are written (:func:`changed_fields`); when none does, nothing but the declarations is
    logged and the version stays (``fields`` is empty). Only a change of an
    embedded field (statement, context, pattern) embeds, once, before the lock, as a record
    does; any other change keeps the stored vector. The gate and the append share one
    critical section; the pairs the judge raises and lets through are then kept as suspected
    contradictions (a second event in the same critical section).
    """
    given = _update_given(cmd)
    with app.store.writing():
        current = app.store.get(cmd.id)
        named = candidate({}, compatible_with=cmd.compatible_with, supersedes=cmd.supersedes)
        require_targets(app, named)
        changes = changed_fields(current, given, cmd.expected_version) if given else {}
        if not (GATED_CHANGES | EMBEDDED_CHANGES) & changes.keys():
            node = current
            if changes:
                node = app.store.update(cmd.id, changes, actor, cmd.expected_version)
            _declare(app, cmd, actor)
            return Updated(app.store.get(cmd.id) if cmd.supersedes else node, sorted(changes))
    text: str | None = None
    vector: Vector | None = None
    if EMBEDDED_CHANGES & changes.keys():
        text = _stored_text(current, changes)
        vector = app.index.embed([text])[0]
        merged = {**current.model_dump(mode="json", exclude_none=True), **changes}
        if "text" in changes:
            prejudge(app, candidate(merged, node_id=cmd.id, vector=vector))
    with app.store.writing():
        current = app.store.get(cmd.id)
        changes = changed_fields(current, given, cmd.expected_version)  # changed meanwhile?
        if not changes:
            _declare(app, cmd, actor)
            return Updated(app.store.get(cmd.id), [])
        gated = bool(GATED_CHANGES & changes.keys())
        if EMBEDDED_CHANGES & changes.keys():
            now = _stored_text(current, changes)
            if now != text or vector is None:  # embed what is there now
                text, vector = now, app.index.embed([now])[0]
        else:
            text = vector = None
        verdict, note, conflicts = None, None, []
        if gated:
            judged = _gate_update(app, cmd, current, changes, vector, actor)
            verdict, conflicts = judged.verdict, judged.conflicts
            note = merge_notes(admit(verdict, cmd.override), judged.note())
            if app.on_gated is not None:
                app.on_gated()
        if text is None or vector is None:
            node = app.store.update(cmd.id, changes, actor, cmd.expected_version, note=note)
        else:
            with app.index.prepared(text, vector):
                node = app.store.update(cmd.id, changes, actor, cmd.expected_version, note=note)
        if conflicts:
            app.store.link_many([suspected_edge(cmd.id, c) for c in conflicts], actor)
        _declare(app, cmd, actor)
    overridden = note is not None and "guardrailOverride" in note
    return Updated(app.store.get(cmd.id), sorted(changes), verdict, overridden)


def _update_given(cmd: UpdateDecision) -> dict[str, Any]:
    """The changes an update gives; refused when it gives nothing to do."""
    given = cmd.changes.given()
    if not given and not cmd.compatible_with and not cmd.supersedes:
        message = "must name at least one field (or give compatibleWith or supersedes)"
        raise ValidationError("changes", message)
    if cmd.id in cmd.supersedes:
        raise ValidationError("supersedes", "a decision does not supersede itself")
    return given


def _declare(app: Decigraph, cmd: UpdateDecision, actor: str) -> None:
    """An update's declarations: the decisions it supersedes, those compatible with it."""
    if cmd.supersedes:
        drafts = [EdgeDraft(cmd.id, t, EdgeType.SUPERSEDES) for t in cmd.supersedes]
        app.store.link_many(drafts, actor)
    declare_compatible(app, cmd.id, cmd.compatible_with, actor)


def _gate_update(
    app: Decigraph,
    cmd: UpdateDecision,
    current: Node,
    changes: Mapping[str, Any],
    vector: Vector | None,
    actor: str,
) -> Judgement:
    """The gate's judgement of ``current`` as ``changes`` would leave it (hold the lock)."""
    merged = {**current.model_dump(mode="json", exclude_none=True), **changes}
    superseded = [
        t
        for _, t, k in app.store.graph.out_edges(cmd.id, keys=True)
        if k == EdgeType.SUPERSEDES.value
    ]
    superseded += [t for t in cmd.supersedes if t not in superseded]
    cand = candidate(
        merged,
        supersedes=superseded,
        compatible_with=cmd.compatible_with,
        node_id=cmd.id,
        vector=vector,
        judged="text" in changes,
    )
    return judge(app, cand, agent=actor)


def withdraw_suspicion(app: Decigraph, a: str, b: str, actor: str) -> None:
    """Remove the suspected ``contradicts`` edge between ``a`` and ``b`` (either way), if any;
    a confirmed one stays. Hold ``app.store.writing()``."""
    G = app.store.graph
    for u, v in ((a, b), (b, a)):
        attrs = G.get_edge_data(u, v, key=EdgeType.CONTRADICTS.value) if u in G and v in G else None
        if attrs is not None and edge_signal(attrs) == SUSPECTED:
            app.store.unlink(u, v, actor, EdgeType.CONTRADICTS)


def declare_compatible(app: Decigraph, node_id: str, others: Sequence[str], actor: str) -> None:
    """Declare ``node_id`` compatible with each of ``others``: a suspected contradiction
    between them is withdrawn and a ``relates_to`` edge marked ``compatible`` written (the
    judge never raises the pair again). A confirmed contradiction stays: unlink it first."""
    if not others:
        return
    with app.store.writing():
        for other in others:
            if other == node_id:
                raise ValidationError("compatibleWith", "a decision is compatible with itself")
            withdraw_suspicion(app, node_id, other, actor)
        app.store.link_many([compatible_edge(node_id, other) for other in others], actor)


def review_decision(app: Decigraph, cmd: ReviewDecision, actor: str) -> Node:
    return app.store.review(
        cmd.id,
        cmd.outcome,
        actor,
        actual_result=cmd.actual_result,
        lessons=cmd.lessons,
        notes=cmd.notes,
        affected_kpis=cmd.affected_kpis,
        expected_version=cmd.expected_version,
    )


def link(app: Decigraph, cmd: LinkDecisions, actor: str) -> LinkResult:
    """Link two decisions. Linking a pair the judge raised as ``contradicts`` confirms it: the
    suspected edge is replaced by the caller's (``findContradictions`` then says confirmed)."""
    with app.store.writing():
        if EdgeType(cmd.type) is EdgeType.CONTRADICTS:
            withdraw_suspicion(app, cmd.source, cmd.target, actor)
        return app.store.link(
            cmd.source, cmd.target, cmd.type, actor, weight=cmd.weight, context=cmd.context
        )


def unlink(app: Decigraph, cmd: UnlinkDecisions, actor: str) -> None:
    app.store.unlink(cmd.source, cmd.target, actor, cmd.type)


def supersede(
    app: Decigraph, new_id: str, old_id: str, actor: str, context: str | None = None
) -> Edge:
    return app.store.supersede(new_id, old_id, actor, context)


#: What a re-sent memory item may change (as an ``update`` event); ``kind``, ``source`` and
#: ``id`` say which item it is, so a re-send that changes one of them is refused.
RESENT_CHANGES = ("text", "occurred_at", "entities", "tags", "project")


def remember_item(
    app: Decigraph, draft: MemoryDraft, actor: str, vector: Vector | None = None
) -> Remembered:
    """Store a memory item, once.

    An item already stored (the same ``external_id``, or without one the same words from the
    same source at the same time) is not stored again. Re-sent with other values for fields it
    states (a new text under a known ``external_id``), the stored item is updated by a logged
    ``update`` event: the new text is re-embedded, the old version stays in the log, and
    ``updated`` names the fields. Re-sent identical, nothing is written. A re-send naming
    another ``kind``, ``source`` or ``id`` is refused (:class:`ValidationError` on that field).
    """
    result: WriteResult = remember(app.index, draft, actor, app.auto_edges, vector)
    if result.created:
        return Remembered(result.node, True, result.edges, result.suggestions)
    _same_item(result.node, draft)
    stated = draft.model_fields_set
    given = {name: getattr(draft, name) for name in RESENT_CHANGES if name in stated}
    changes = changed_fields(result.node, given)
    if not changes:
        return Remembered(result.node, False)
    if "text" in changes and vector is None:
        vector = app.index.embed([draft.text])[0]
    with app.store.writing():
        current = app.store.get(result.node.id)
        changes = changed_fields(current, given)  # changed meanwhile?
        if not changes:
            return Remembered(current, False)
        if "text" not in changes or vector is None:
            node = app.store.update(current.id, changes, actor)
        else:
            stored_text = compose_embedding_text(draft.text, current.context, current.pattern)
            with app.index.prepared(stored_text, vector):
                node = app.store.update(current.id, changes, actor)
    return Remembered(node, False, updated=sorted(changes))


def _same_item(stored: Node, draft: MemoryDraft) -> None:
    """Refuse a re-send that names the stored item but says it is another one."""
    named = f"external id {stored.external_id!r}" if stored.external_id else "the same content"
    if draft.id is not None and draft.id != stored.id:
        raise ValidationError("id", f"{named} already names {stored.id!r}, not {draft.id!r}")
    for name in ("kind", "source"):
        if name in draft.model_fields_set and getattr(draft, name) != getattr(stored, name):
            raise ValidationError(
                name,
                f"{named} already names {stored.id!r}, whose {name} is "
                f"{getattr(stored, name)!r}: an item keeps its {name}; use another external id",
            )
