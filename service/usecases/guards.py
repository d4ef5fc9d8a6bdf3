"""Guardrails an agent asks before acting: ``check`` (what-if, writes nothing) and
``pre_action`` (relevant decisions plus the verdict, and optionally the record itself).

Both judge the same :class:`~.gate.Candidate` the write path judges, so asking first and
recording later give the same verdict on the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from retrieval.matrix import Vector

from .briefing import Briefing, brief
from .context import Decigraph
from .gate import candidate, judge
from .inputs import ProposedAction
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
    recorded: Recorded | None = None
    notes: list[str] = field(default_factory=list)
    briefing: Briefing = field(default_factory=Briefing)


def pre_action(
    app: Decigraph,
    action: ProposedAction,
    actor: str,
    *,
    query_limit: int = 5,
    auto_record: bool = False,
    floor: float | None = None,
    explain: bool = False,
) -> PreActionResult:
    """The decisions relevant to ``action`` and the guardrails' verdict on it; with
    ``auto_record``, an allowed action is recorded through the same gated write as
    ``recordDecision`` (its ``contradicts``, ``supersedes`` and ``override`` included).

    The briefing (:func:`.briefing.brief`) names at most ``query_limit`` decisions (at least
    the conflicts), each at least ``floor`` relevant (default ``Settings.relevance_floor``);
    it is read before the action is recorded, so the action never briefs on itself."""
    # One model call: the statement (what the briefing searches with) and the stored text
    # beside it (what the judge compares and, when recorded, what the index keeps).
    cmd = action.to_record()
    stored_vector, statement_vector = embed_decision(app, cmd.draft())
    verdict = check(app, action, agent=actor, vector=stored_vector)
    settled = set(action.supersedes) | set(action.compatible_with)
    briefing = brief(
        app,
        action.text,
        statement_vector,
        [c for c in verdict.conflicts if c.target not in settled],
        floor=app.settings.relevance_floor if floor is None else floor,
        limit=max(query_limit, 1),
        project=action.project,
        explain=explain,
    )
    if not auto_record:
        return PreActionResult(verdict, briefing=briefing)
    try:
        recorded = record_decision(
            app, cmd, actor, rule_fields=rule_view(action), vector=stored_vector
        )
    except GuardrailBlockedError as exc:
        return PreActionResult(exc.verdict, briefing=briefing)
    return PreActionResult(recorded.verdict, recorded=recorded, briefing=briefing)
