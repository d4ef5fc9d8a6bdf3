"""The gate: every guardrail's verdict on a decision before it is written.

A verdict combines the YAML rules (:mod:`.rules`) and the graph constraint (F045): a decision
must not contradict an active decision whose salience exceeds the threshold, unless it
supersedes it. ``checkGuardrails``, ``preAction`` and every write that can create a
contradiction (record, an update of the statement, category or stakes, import) ask
:func:`judge` with the same :class:`Candidate`, so the check an agent asks before acting and
the gate that later refuses it cannot disagree. The writes call it inside the store's critical
section, with the statement's embedding computed beforehand, and reuse its contradiction pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graph.enums import Lifecycle
from graph.errors import NodeNotFoundError
from graph.lifecycle import effective_lifecycle
from retrieval.autoedges import Suggestion, contradiction_suggestions

from .breakers import gate_breakers
from .context import Decigraph
from .rules import Finding, Verdict, evaluate_rules

GRAPH_GUARDRAIL = "graph-contradiction"
GRAPH_GUARDRAIL_NAME = "Graph constraint"


@dataclass(frozen=True)
class Candidate:
    """A decision as it would be stored, in the form every guardrail reads.

    ``fields`` is what the rules see (the decision's fields, its statement under ``decision``
    and ``description`` alike); ``contradicts`` are decisions the caller links as contradicted;
    ``supersedes`` are decisions it replaces (never a contradiction to block); ``node_id`` is
    the decision itself when it already exists (an update).
    """

    text: str
    fields: Mapping[str, Any]
    category: str | None = None
    entities: Sequence[str] = ()
    contradicts: Sequence[str] = ()
    supersedes: Sequence[str] = ()
    node_id: str | None = None


def candidate(
    fields: Mapping[str, Any],
    *,
    contradicts: Sequence[str] = (),
    supersedes: Sequence[str] = (),
    node_id: str | None = None,
) -> Candidate:
    """The candidate for a decision's fields (snake_case, JSON values; ``text`` the statement)."""
    text = str(fields.get("text") or "")
    view = {k: v for k, v in fields.items() if v is not None and k != "text"}
    view.update(decision=text, description=text)
    category = fields.get("category")
    return Candidate(
        text=text,
        fields=view,
        category=None if category is None else str(category),
        entities=tuple(str(e) for e in fields.get("entities") or ()),
        contradicts=tuple(contradicts),
        supersedes=tuple(supersedes),
        node_id=node_id,
    )


@dataclass
class Judgement:
    """A verdict and the contradiction pass behind it (the write reuses it as suggestions)."""

    verdict: Verdict
    contradictions: list[Suggestion] = field(default_factory=list)


def judge(app: Decigraph, cand: Candidate, *, agent: str | None = None) -> Judgement:
    """Every guardrail's verdict on ``cand``; ``agent`` is who acts (circuit breakers scoped
    ``agent:<id>`` match it). Nothing here needs an embedding: the contradiction pass reads
    statements (:func:`detect_contradictions`).

    Hold ``app.store.lock`` around this and the write it admits. A guardrail that fails while
    evaluating blocks, with the failure in its message (fail closed). Circuit breakers come
    last: a half-open breaker's probe goes only to an action nothing else blocks.
    """
    require_targets(app, cand)
    verdict = Verdict()
    evaluate_rules(app.rules, cand.fields, verdict)
    verdict.evaluated += 1
    found: list[Suggestion] = []
    try:
        with app.store.lock:
            found = detect_contradictions(app, cand)
            for finding in graph_constraint(app, cand, found):
                verdict.add(finding)
    except Exception as exc:  # fail closed
        message = f"guardrail {GRAPH_GUARDRAIL} could not be evaluated: {exc}"
        verdict.add(Finding(GRAPH_GUARDRAIL, GRAPH_GUARDRAIL_NAME, message, "block"))
    gate_breakers(app, cand.fields, agent, verdict)
    return Judgement(verdict, found)


def require_targets(app: Decigraph, cand: Candidate) -> None:
    """Every decision the candidate contradicts or supersedes exists (else the error names it
    as the caller did: ``supersedes.0``), so a verdict never rests on an unknown id."""
    with app.store.lock:
        for name, ids in (("contradicts", cand.contradicts), ("supersedes", cand.supersedes)):
            for number, node_id in enumerate(ids):
                if node_id not in app.store.graph:
                    raise NodeNotFoundError(node_id, f"{name}.{number}")


def detect_contradictions(app: Decigraph, cand: Candidate) -> list[Suggestion]:
    """Active decisions whose *statement* contradicts the candidate's statement.

    Same subject and a different choice, one rejecting what the other adopts, or opposite
    force or different values for the same policy, where the scopes meet
    (:mod:`retrieval.stance_compare`). Candidates come from the statement index, so a stored
    decision's context never dilutes it, and no embedding is needed.
    """
    if not cand.text:
        return []
    return contradiction_suggestions(app.index, cand.text, cand.node_id)


def graph_constraint(
    app: Decigraph, cand: Candidate, detected: Sequence[Suggestion]
) -> list[Finding]:
    """Block contradicting an active decision whose salience exceeds the threshold (F045)."""
    G = app.store.graph
    exempt = {*cand.supersedes, cand.node_id}
    targets = {t: "linked as contradicted" for t in cand.contradicts if t in G and t not in exempt}
    for s in detected:
        if s.target not in exempt:
            targets.setdefault(s.target, s.reason)
    if not targets:
        return []
    threshold = app.settings.salience_threshold
    active = [t for t in sorted(targets) if effective_lifecycle(G, t) is Lifecycle.ACCEPTED]
    findings = []
    for target, (score, exact) in target_salience(app, active, threshold).items():
        if score <= threshold:
            continue
        summary = str(G.nodes[target]["text"])[:120]
        shown = f"{score:.2f}" if exact else f"at least {score:.2f}"
        findings.append(
            Finding(
                GRAPH_GUARDRAIL,
                GRAPH_GUARDRAIL_NAME,
                f"contradicts active decision {target} ({summary!r}; {targets[target]}), "
                f"whose salience {shown} exceeds {threshold:.2f}",
                "block",
                f"supersede {target} in the same call (supersedes: [{target!r}]), "
                "or record with an explicit override",
            )
        )
    return findings


#: ``Settings.gate_salience``'s environment variable: ``exact`` reads the whole-graph salience
#: (one PageRank per write that contradicts something; the behaviour before issue 16).
GATE_SALIENCE_ENV = "DECIGRAPH_GATE_SALIENCE"


def target_salience(
    app: Decigraph, targets: Sequence[str], threshold: float
) -> dict[str, tuple[float, bool]]:
    """``{target: (salience, exact)}`` in id order, from what leans on each target only
    (:meth:`~graph.store.DecisionStore.salience_of`: no whole-graph PageRank after every
    write). ``exact`` is False for a hub whose lower bound already exceeds ``threshold``: the
    verdict is the same as with the exact score, which the message then does not claim."""
    if app.settings.gate_salience == "exact":
        scores = app.store.salience()
        return {t: (scores.get(t, 0.0), True) for t in sorted(targets)}
    local = app.store.salience_of(targets, at_least=threshold)
    return {t: (s.score, s.exact) for t, s in local.items()}


def graph_rule_description(app: Decigraph) -> str:
    return (
        "Block contradicting an active decision whose salience exceeds "
        f"{app.settings.salience_threshold}"
    )
