"""The gate: every guardrail's verdict on a decision before it is written.

A verdict combines the YAML rules (:mod:`.rules`) and the graph constraint: a decision must not
contradict an accepted decision others rely on (salience above the threshold) unless it
supersedes it, overrides the block with a reason, or declares the pair compatible. Whether two
statements contradict is the learned pair judge's call (:mod:`retrieval.contradiction`), made on
the few decisions nearest the statement, in tiers: ``block`` (refused) and ``review`` (written,
and the pair kept as a suspected contradiction). ``checkGuardrails``, ``preAction`` and every
write that can create a contradiction (record, an update of the statement, import) ask
:func:`judge` with the same :class:`Candidate`, so the check an agent asks before acting and the
gate that later refuses it cannot disagree. Writes call :func:`prejudge` before their critical
section (the network runs there, its scores cached) and :func:`judge` inside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graph.algorithms.walk import edge_signal
from graph.enums import EdgeType, Lifecycle
from graph.errors import NodeNotFoundError
from graph.lifecycle import effective_lifecycle
from retrieval.contradiction.candidates import Rival, rivals
from retrieval.contradiction.tiers import COMPATIBLE, Conflict, tier_of
from retrieval.matrix import Vector
from retrieval.text import compose_embedding_text

from .breakers import gate_breakers
from .context import Decigraph
from .inputs import context_text
from .rules import Finding, Verdict, evaluate_rules

GRAPH_GUARDRAIL = "graph-contradiction"
GRAPH_GUARDRAIL_NAME = "Graph constraint"


@dataclass(frozen=True)
class Candidate:
    """A decision as it would be stored, in the form every guardrail reads.

    ``fields`` is what the rules see (the decision's fields, its statement under ``decision``
    and ``description`` alike); ``contradicts`` are decisions the caller links as contradicted;
    ``supersedes`` are decisions it replaces and ``compatible_with`` decisions it declares
    compatible (neither is ever raised as a contradiction); ``node_id`` is the decision itself
    when it already exists (an update). ``stored_text`` is what a record embeds (statement,
    context, pattern), ``vector`` its embedding when the caller has it; ``judged`` is False
    when the statement is unchanged (an update of stakes): the rules run, the judge does not.
    """

    text: str
    fields: Mapping[str, Any]
    stored_text: str = ""
    category: str | None = None
    entities: Sequence[str] = ()
    contradicts: Sequence[str] = ()
    supersedes: Sequence[str] = ()
    compatible_with: Sequence[str] = ()
    node_id: str | None = None
    vector: Vector | None = None
    judged: bool = True


def candidate(
    fields: Mapping[str, Any],
    *,
    contradicts: Sequence[str] = (),
    supersedes: Sequence[str] = (),
    compatible_with: Sequence[str] = (),
    node_id: str | None = None,
    vector: Vector | None = None,
    judged: bool = True,
) -> Candidate:
    """The candidate for a decision's fields (snake_case, JSON values; ``text`` the statement)."""
    text = str(fields.get("text") or "")
    view = {k: v for k, v in fields.items() if v is not None and k != "text"}
    view.update(decision=text, description=text)
    category = fields.get("category")
    context = fields.get("context")
    if isinstance(context, dict):  # CSTP's object context, kept as the text a record stores
        context = context_text(context)
    pattern = fields.get("pattern")
    return Candidate(
        text=text,
        fields=view,
        stored_text=compose_embedding_text(
            text, context, None if pattern is None else str(pattern)
        ),
        category=None if category is None else str(category),
        entities=tuple(str(e) for e in fields.get("entities") or ()),
        contradicts=tuple(contradicts),
        supersedes=tuple(supersedes),
        compatible_with=tuple(compatible_with),
        node_id=node_id,
        vector=vector,
        judged=judged,
    )


@dataclass
class Judgement:
    """A verdict and the raised pairs behind it (the write keeps them as suspected edges)."""

    verdict: Verdict

    @property
    def conflicts(self) -> list[Conflict]:
        return self.verdict.conflicts

    def note(self) -> dict[str, Any] | None:
        """What the event records of the judgement: the judge's version and each raised pair
        (replay reads the edges it wrote; nothing is judged again)."""
        if not self.conflicts:
            return None
        return {
            "judgement": {
                "judge": self.conflicts[0].judge,
                "conflicts": [c.to_note() for c in self.conflicts],
            }
        }


def judge(app: Decigraph, cand: Candidate, *, agent: str | None = None) -> Judgement:
    """Every guardrail's verdict on ``cand``; ``agent`` is who acts (circuit breakers scoped
    ``agent:<id>`` match it).

    Hold ``app.store.lock`` around this and the write it admits (the statement is embedded
    before the lock is taken when ``cand.vector`` is None). A guardrail that fails while
    evaluating blocks, with the failure in its message (fail closed). Circuit breakers come
    last: a half-open breaker's probe goes only to an action nothing else blocks.
    """
    require_targets(app, cand)
    verdict = Verdict()
    evaluate_rules(app.rules, cand.fields, verdict)
    verdict.evaluated += 1
    conflicts: list[Conflict] = []
    try:
        vector = statement_vector(app, cand)
        with app.store.lock:
            conflicts, findings = graph_constraint(app, cand, vector)
            for finding in findings:
                verdict.add(finding)
    except Exception as exc:  # fail closed
        message = f"guardrail {GRAPH_GUARDRAIL} could not be evaluated: {exc}"
        verdict.add(Finding(GRAPH_GUARDRAIL, GRAPH_GUARDRAIL_NAME, message, "block"))
    verdict.conflicts = conflicts
    gate_breakers(app, cand.fields, agent, verdict)
    return Judgement(verdict)


def statement_vector(app: Decigraph, cand: Candidate) -> Vector | None:
    """The embedding rivals are searched with (None when nothing is judged)."""
    if not cand.judged or not cand.text:
        return None
    if cand.vector is not None:
        return cand.vector
    return app.index.embed([cand.stored_text or cand.text])[0]


def prejudge(app: Decigraph, cand: Candidate) -> None:
    """Score ``cand``'s pairs now, outside any write's critical section: the network runs
    here and :func:`judge` then reads its cached scores under the lock (a rival that appears
    in between is scored there). ``cand.vector`` must be set."""
    if not cand.judged or not cand.text or cand.vector is None:
        return
    with app.store.lock:
        found = _rivals(app, cand, cand.vector)
        pairs = [(str(app.store.graph.nodes[r.target]["text"]), cand.text) for r in found]
    scores = app.pair_judge.score(pairs)
    if app.llm_judge is None:
        return
    thresholds, threshold = app.pair_judge.thresholds, app.settings.salience_threshold
    confident = [
        r.target for r, s in zip(found, scores, strict=True) if s.contradicts >= thresholds.block
    ]
    with app.store.lock:
        salience = target_salience(app, confident, threshold) if confident else {}
    review = [
        pair
        for pair, r, s in zip(pairs, found, scores, strict=True)
        if tier_of(s.contradicts, salience.get(r.target, (0.0, True))[0] > threshold, thresholds)
        == "review"
    ]
    app.llm_judge.verdicts(review)  # the LLM's answers are cached for judge() under the lock


def require_targets(app: Decigraph, cand: Candidate) -> None:
    """Every decision the candidate names exists (else the error names it as the caller did:
    ``supersedes.0``), so a verdict never rests on an unknown id."""
    with app.store.lock:
        named = (
            ("contradicts", cand.contradicts),
            ("supersedes", cand.supersedes),
            ("compatibleWith", cand.compatible_with),
        )
        for name, ids in named:
            for number, node_id in enumerate(ids):
                if node_id not in app.store.graph:
                    raise NodeNotFoundError(node_id, f"{name}.{number}")


def settled_with(app: Decigraph, node_id: str | None) -> set[str]:
    """Decisions already settled with ``node_id``: declared compatible, superseded by or
    superseding it, or linked to it as contradicting (confirmed or suspected): never raised
    again."""
    G = app.store.graph
    if node_id is None or node_id not in G:
        return set()
    out: set[str] = set()
    for u, v, key, attrs in [
        *G.out_edges(node_id, keys=True, data=True),
        *G.in_edges(node_id, keys=True, data=True),
    ]:
        other = v if u == node_id else u
        settled = key in (EdgeType.SUPERSEDES.value, EdgeType.CONTRADICTS.value)
        if settled or edge_signal(attrs) == COMPATIBLE:
            out.add(other)
    return out


def declared_compatible(app: Decigraph, target: str, text: str) -> bool:
    """Whether ``target`` was declared compatible with a decision whose statement is ``text``
    (case and spacing aside): the same proposal, asked again, is not raised again."""
    G = app.store.graph
    wanted = " ".join(text.lower().split())
    for u, v, attrs in [*G.out_edges(target, data=True), *G.in_edges(target, data=True)]:
        if edge_signal(attrs) == COMPATIBLE:
            other = v if u == target else u
            if " ".join(str(G.nodes[other].get("text", "")).lower().split()) == wanted:
                return True
    return False


def _rivals(app: Decigraph, cand: Candidate, vector: Vector) -> list[Rival]:
    exclude = {*cand.supersedes, *cand.compatible_with, *cand.contradicts}
    if cand.node_id is not None:
        exclude |= {cand.node_id, *settled_with(app, cand.node_id)}
    found = rivals(
        app.index, cand.text, vector, exclude=exclude, pool=app.auto_edges.semantic_scan_pool
    )
    return [r for r in found if not declared_compatible(app, r.target, cand.text)]


def graph_constraint(
    app: Decigraph, cand: Candidate, vector: Vector | None
) -> tuple[list[Conflict], list[Finding]]:
    """The raised pairs and their findings: a ``block`` finding for a confident contradiction
    of an accepted decision others rely on (or one the caller links as contradicted), a warning
    for each ``review`` pair. Hold ``app.store.lock``."""
    G = app.store.graph
    threshold = app.settings.salience_threshold
    findings: list[Finding] = []
    exempt = {*cand.supersedes, cand.node_id}
    named = [t for t in sorted(set(cand.contradicts)) if t in G and t not in exempt]
    if named:
        linked = [t for t in named if effective_lifecycle(G, t) is Lifecycle.ACCEPTED]
        for target, (score, exact) in target_salience(app, linked, threshold).items():
            if score > threshold:
                findings.append(_block(app, target, "linked as contradicted", score, exact))
    if vector is None:
        return [], findings
    found = _rivals(app, cand, vector)
    if not found:
        return [], findings
    scorer = app.pair_judge
    texts = [str(G.nodes[r.target]["text"]) for r in found]
    scores = scorer.score([(text, cand.text) for text in texts])
    block = scorer.thresholds.block
    confident = [r.target for r, s in zip(found, scores, strict=True) if s.contradicts >= block]
    salience = target_salience(app, confident, threshold) if confident else {}
    conflicts: list[Conflict] = []
    for rival, text, s in zip(found, texts, scores, strict=True):
        score, exact = salience.get(rival.target, (0.0, True))
        tier = tier_of(s.contradicts, score > threshold, scorer.thresholds)
        if tier is None:
            continue
        conflicts.append(Conflict(rival.target, s.contradicts, tier, s.kind, scorer.version, text))
    conflicts = consult_llm(app, cand.text, conflicts)
    conflicts.sort(key=lambda c: (c.tier != "block", -c.probability, c.target))
    for c in conflicts:
        if c.tier == "block":
            score, exact = salience[c.target]
            reason = f"P(contradicts) {c.probability:.2f}: {c.reason}"
            findings.append(_block(app, c.target, reason, score, exact))
        else:
            findings.append(_review(app, c))
    return conflicts, findings


def consult_llm(app: Decigraph, text: str, conflicts: list[Conflict]) -> list[Conflict]:
    """The optional LLM judge's second opinion on ``review`` pairs: one it reads as compatible
    or unrelated is dropped; one it confirms stays a review, marked with its version. It never
    blocks (a block is the local judge's confident call) and, when it does not answer, the
    local verdict stands."""
    llm = app.llm_judge
    review = [c for c in conflicts if c.tier == "review"]
    if llm is None or not review:
        return conflicts
    G = app.store.graph
    answers = llm.verdicts([(str(G.nodes[c.target]["text"]), text) for c in review])
    opinion = {c.target: a for c, a in zip(review, answers, strict=True)}
    out: list[Conflict] = []
    for c in conflicts:
        answer = opinion.get(c.target)
        if c.tier != "review" or answer is None:
            out.append(c)
        elif answer.label == "contradicts":
            judged_by = f"{c.judge}+{llm.version}"
            out.append(Conflict(c.target, c.probability, c.tier, c.kind, judged_by, c.statement))
    return out


def _block(app: Decigraph, target: str, reason: str, score: float, exact: bool) -> Finding:
    G = app.store.graph
    summary = str(G.nodes[target]["text"])[:120]
    threshold = app.settings.salience_threshold
    shown = f"{score:.2f}" if exact else f"at least {score:.2f}"
    return Finding(
        GRAPH_GUARDRAIL,
        GRAPH_GUARDRAIL_NAME,
        f"contradicts accepted decision {target} ({summary!r}; {reason}), which others rely on "
        f"(salience {shown} > {threshold:.2f})",
        "block",
        f"if it replaces {target}: supersedes: [{target!r}]; if both hold: compatibleWith: "
        f"[{target!r}]; else override: {{reason: ...}}",
    )


def _review(app: Decigraph, c: Conflict) -> Finding:
    summary = str(app.store.graph.nodes[c.target]["text"])[:120]
    return Finding(
        GRAPH_GUARDRAIL,
        GRAPH_GUARDRAIL_NAME,
        f"may contradict {c.target} ({summary!r}; P(contradicts) {c.probability:.2f}: "
        f"{c.reason}); kept as a suspected contradiction",
        "warn",
        f"if it replaces {c.target}: supersedes: [{c.target!r}]; if both hold: compatibleWith: "
        f"[{c.target!r}]",
    )


#: ``Settings.gate_salience``'s environment variable: ``exact`` reads the whole-graph salience
#: (one PageRank per write that contradicts something).
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
    t = app.pair_judge.thresholds
    return (
        "Block a confident contradiction (P >= "
        f"{t.block}) of an accepted decision whose salience exceeds "
        f"{app.settings.salience_threshold}; raise P >= {t.review} for review"
    )
