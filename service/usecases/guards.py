"""Guardrails an agent asks before acting: ``check`` (what-if, writes nothing) and
``pre_action`` (relevant decisions plus the verdict, and optionally the record itself).

Both judge the same :class:`~.gate.Candidate` the write path judges, so asking first and
recording later give the same verdict on the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from retrieval.query import RetrievalMode

from .context import Decigraph
from .gate import candidate, judge
from .inputs import DecisionQuery, ProposedAction
from .reads import Queried, query
from .rules import GuardrailBlockedError, Verdict
from .writes import Recorded, record_decision, rule_view


def check(app: Decigraph, action: ProposedAction) -> Verdict:
    """Every guardrail's verdict on recording ``action`` now; nothing is written."""
    vector = app.index.embed([action.text])[0]
    cand = candidate(
        rule_view(action), contradicts=action.contradicts, supersedes=action.supersedes
    )
    return judge(app, cand, vector).verdict


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
    relevant = None
    if query_limit:
        q = DecisionQuery(query=action.text, limit=query_limit, retrieval_mode=RetrievalMode.HYBRID)
        relevant = query(app, q)
    if not auto_record:
        return PreActionResult(check(app, action), relevant)
    try:
        recorded = record_decision(app, action.to_record(), actor, rule_fields=rule_view(action))
    except GuardrailBlockedError as exc:
        return PreActionResult(exc.verdict, relevant)
    return PreActionResult(recorded.verdict, relevant, recorded)
