"""Guardrails an agent asks before acting: ``check`` (what-if, writes nothing) and
``pre_action`` (relevant decisions plus the verdict, and optionally the record itself).

Both judge the same :class:`~.gate.Candidate` the write path judges, so asking first and
recording later give the same verdict on the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from retrieval.matrix import Vector
from retrieval.query import RetrievalMode

from .context import Decigraph
from .gate import candidate, judge
from .inputs import DecisionQuery, ProposedAction
from .reads import Queried, query
from .rules import GuardrailBlockedError, Verdict
from .writes import Recorded, embed_decision, record_decision, rule_view


def check(
    app: Decigraph,
    action: ProposedAction,
    *,
    agent: str | None = None,
    vector: Vector | None = None,
) -> Verdict:
    """Every guardrail's verdict on ``agent`` recording ``action`` now; nothing is logged.
    ``vector`` is the embedding of what a record of ``action`` would store (embedded here when
    not given), so the judge reads the same rivals the record would. A half-open circuit
    breaker's probe is taken in memory, as CSTP's check takes it."""
    cand = candidate(
        rule_view(action),
        contradicts=action.contradicts,
        supersedes=action.supersedes,
        compatible_with=action.compatible_with,
        vector=vector,
    )
    return judge(app, cand, agent=agent).verdict


@dataclass
class PreActionResult:
    verdict: Verdict
    relevant: Queried | None = None
    recorded: Recorded | None = None
    notes: list[str] = field(default_factory=list)


def pre_action(
    app: Decigraph,
    action: ProposedAction,
    actor: str,
    *,
    query_limit: int = 5,
    auto_record: bool = False,
) -> PreActionResult:
    """The decisions relevant to ``action`` and the guardrails' verdict on it; with
    ``auto_record``, an allowed action is recorded through the same gated write as
    ``recordDecision`` (its ``contradicts``, ``supersedes`` and ``override`` included)."""
    # One model call: the statement (what the query searches for) and, when the action is to
    # be recorded, the stored text beside it (what the index keeps).
    cmd = action.to_record()
    stored_vector, statement_vector = embed_decision(app, cmd.draft())
    relevant = None
    if query_limit:
        q = DecisionQuery(query=action.text, limit=query_limit, retrieval_mode=RetrievalMode.HYBRID)
        relevant = query(app, q, vector=statement_vector)
    if not auto_record:
        return PreActionResult(check(app, action, agent=actor, vector=stored_vector), relevant)
    try:
        recorded = record_decision(
            app, cmd, actor, rule_fields=rule_view(action), vector=stored_vector
        )
    except GuardrailBlockedError as exc:
        return PreActionResult(exc.verdict, relevant)
    return PreActionResult(recorded.verdict, relevant, recorded)
