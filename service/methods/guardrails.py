"""Guardrail methods: ``checkGuardrails`` (what-if), ``listGuardrails`` and ``preAction``.

``action`` takes every ``recordDecision`` field (``description`` is the statement; ``decision``
is accepted too), so what an agent checks is exactly what it would record.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from graph.enums import Category
from graph.model import MAX_PATTERN, MAX_REASONS, Node, Reason, Tags
from graph.timeutil import format_ts
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases.analytics import CalibrationFilters, CalibrationQuery, calibration
from service.usecases.compaction import compaction_levels
from service.usecases.gate import GRAPH_GUARDRAIL, graph_rule_description
from service.usecases.inputs import Input, ProposedAction
from service.usecases.rules import Check, Rule

from .briefs import brief_view
from .decisions import recorded_view
from .params import Params, wire


class ActionParams(Params, ProposedAction):
    model_config = wire(text=("description", "decision"))


class CheckParams(Params):
    action: ActionParams


class PreActionOptions(Params):
    #: The most decisions the answer names (conflicts always are).
    query_limit: int = Field(default=5, ge=0, le=50)
    #: Off unless asked (CSTP records by default): asking first should not write; CSTP's MCP
    #: tool, which does record by default, sends it explicitly.
    auto_record: bool = False
    include_patterns: bool = True
    #: ``cstp``: CSTP's answer (relevant decisions as DecisionSummary rows, each with ``why``
    #: and an absolute ``relevance``); ``brief``: the compact briefing an agent reads (MCP).
    view: Literal["cstp", "brief"] = "cstp"
    #: The least relevance (0-1) a decision needs to be named (default: the server's floor).
    min_relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    #: The brief's size limit, in characters of compact JSON.
    max_chars: int = Field(default=2_000, ge=300, le=50_000)
    #: Add each item's scoring signals (cosine, keyword coverage, judge P).
    explain: bool = False


class PreActionExtras(Input):
    """CSTP's top-level ``reasons``, ``tags`` and ``pattern``, used for the auto-record (the MCP
    tool sends ``null`` for those it does not have)."""

    reasons: list[Reason] | None = Field(default=None, max_length=MAX_REASONS)
    tags: Tags | None = None
    pattern: str | None = Field(default=None, max_length=MAX_PATTERN)


class PreActionParams(Params, PreActionExtras):
    action: ActionParams
    options: PreActionOptions | None = None  # the MCP tool sends null

    def merged_action(self) -> ActionParams:
        """The action with the top-level extras the action itself does not set."""
        extra: dict[str, Any] = {}
        if self.reasons and not self.action.reasons:
            extra["reasons"] = self.reasons
        if self.tags and not self.action.tags:
            extra["tags"] = self.tags
        if self.pattern and not self.action.pattern:
            extra["pattern"] = self.pattern
        return self.action.model_copy(update=extra) if extra else self.action


def verdict_fields(verdict: usecases.Verdict) -> dict[str, Any]:
    out = {
        "allowed": verdict.allowed,
        "violations": [f.to_dict() for f in verdict.violations],
        "warnings": [f.to_dict() for f in verdict.warnings],
        "evaluated": verdict.evaluated,
        "evaluatedAt": datetime.now(UTC).isoformat(),
    }
    if verdict.conflicts:
        out["conflicts"] = [c.to_view() for c in verdict.conflicts]
    return out


class ListRulesParams(Params):
    #: CSTP's ``list-guardrails --scope``: leave out rules scoped elsewhere.
    scope: str | None = None


def check_view(check: Check) -> dict[str, Any]:
    """A condition as decigraph declares it (``op``) and as CSTP's CLI reads it
    (``operator``; a requirement's ``expected``)."""
    return {**check.model_dump(), "operator": check.op, "expected": check.value}


def rule_view(rule: Rule) -> dict[str, Any]:
    """A rule as listGuardrails answers: CSTP's ``scope`` is a list of the values a rule is
    limited to (the CLI joins it with commas); ``scopeBy`` says which field each is for."""
    return {
        "id": rule.id,
        "description": rule.description,
        "action": rule.action,
        "scope": sorted({value for values in rule.scope.values() for value in values}),
        "scopeBy": rule.scope,
        "conditions": [check_view(c) for c in rule.conditions],
        "requirements": [check_view(c) for c in rule.requirements],
    }


def _in_scope(rule: Mapping[str, Any], scope: str) -> bool:
    """CSTP: an unscoped rule always applies; a scoped one only where it names ``scope``."""
    return not rule["scope"] or scope in rule["scope"]


def relevant_view(node: Node, score: float, level: str) -> dict[str, Any]:
    """A relevant decision as CSTP's preAction lists it (a DecisionSummary with its reasons,
    lessons, bridge and compaction level; ``distance`` is 1 - the hybrid score)."""
    row: dict[str, Any] = {
        "id": node.id,
        "title": node.text,
        "category": node.category,
        "confidence": node.confidence,
        "stakes": node.stakes,
        "status": node.status,
        "date": format_ts(node.created_at),
        "distance": round(1.0 - score, 6),
        "score": score,
        "compactionLevel": level,
    }
    if node.outcome is not None:
        row["outcome"] = node.outcome
    if node.reasons:
        row["reasons"] = [r.model_dump(mode="json") for r in node.reasons]
    if node.lessons:
        row["lessons"] = node.lessons
    if node.pattern:
        row["pattern"] = node.pattern
    if node.tags:
        row["tags"] = node.tags
    if node.bridge is not None:
        row["bridge"] = node.bridge.model_dump(mode="json", exclude_none=True)
    return row


def patterns_summary(relevant: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The relevant decisions grouped by pattern (most used first, then by name)."""
    groups: dict[str, list[str]] = {}
    for row in relevant:
        if row.get("pattern"):
            groups.setdefault(row["pattern"], []).append(row["id"])
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [{"pattern": k, "count": len(v), "exampleIds": v[:3]} for k, v in ranked]


def calibration_context(app: usecases.Decigraph, category: Category | None) -> dict[str, Any]:
    """CSTP's ``calibrationContext``: the calibration of the action's category (at least five
    reviewed decisions), else ``{reviewedDecisions: 0}``."""
    query = CalibrationQuery(filters=CalibrationFilters(category=category))
    overall = calibration(app, query)["overall"]
    if overall is None:
        return {"reviewedDecisions": 0}
    keys = ("reviewedDecisions", "brierScore", "accuracy", "calibrationGap", "interpretation")
    return {key: overall[key] for key in keys if key in overall}


def register_guardrails(registry: Registry, app: usecases.Decigraph) -> None:
    def check(p: CheckParams, ctx: CallContext) -> Mapping[str, Any]:
        return verdict_fields(usecases.check(app, p.action, agent=ctx.agent))

    def list_rules(p: ListRulesParams, ctx: CallContext) -> Mapping[str, Any]:
        rules = [rule_view(r) for r in app.rules]
        graph_rule = {
            "id": GRAPH_GUARDRAIL,
            "description": graph_rule_description(app),
            "action": "block",
            "scope": [],
            "scopeBy": {},
            "conditions": [],
            "requirements": [],
        }
        listed = [r for r in [*rules, graph_rule] if p.scope is None or _in_scope(r, p.scope)]
        return {"guardrails": listed, "count": len(listed)}

    def pre_action(p: PreActionParams, ctx: CallContext) -> Mapping[str, Any]:
        started = time.perf_counter()
        options = p.options or PreActionOptions()
        outcome = usecases.pre_action(
            app,
            p.merged_action(),
            ctx.agent,
            query_limit=options.query_limit,
            auto_record=options.auto_record,
            floor=options.min_relevance,
            explain=options.explain,
        )
        verdict = outcome.verdict
        made = recorded_view(outcome.recorded) if outcome.recorded is not None else None
        action = p.merged_action()
        if options.view == "brief":
            extra: dict[str, Any] = {
                "calibrationContext": calibration_context(app, action.category),
                "patternsSummary": [],
                "decisionId": made["id"] if made is not None else None,
            }
            return brief_view(outcome.briefing, verdict, max_chars=options.max_chars, extra=extra)
        items = outcome.briefing.items()
        levels = compaction_levels(app, [i.id for i in items])
        relevant = []
        for item in items:
            node = usecases.get_node(app, item.id)
            if node is not None:
                row = relevant_view(node, item.relevance, levels.get(node.id, "full"))
                row["why"] = item.why
                if item.signals:
                    row["signals"] = item.signals
                relevant.append(row)
        result: dict[str, Any] = {
            "allowed": verdict.allowed,
            "relevantDecisions": relevant,
            "guardrailResults": [f.to_dict() for f in verdict.findings()],
            "decisionId": None,
            "calibrationContext": calibration_context(app, action.category),
            "patternsSummary": patterns_summary(relevant) if options.include_patterns else [],
            "queryTimeMs": round((time.perf_counter() - started) * 1000),
        }
        if not verdict.allowed:
            result["blockReasons"] = [v.message for v in verdict.violations]
        if verdict.conflicts:
            result["conflicts"] = [c.to_view() for c in verdict.conflicts]
        revived = [i for i in outcome.briefing.conflicts if i.p is None]
        if revived:
            result["revives"] = [{"id": i.id, "why": i.why} for i in revived]
        if made is not None:
            result["decisionId"] = made["id"]
            result["quality"] = made["quality"]
            result["guardrailOverride"] = made["guardrail_override"]
            result["suggestions"] = made["suggestions"]
        return result

    # Its answer's ``warnings`` are the guardrails' (CSTP): ignored params go beside them.
    registry.add("cstp.checkGuardrails", CheckParams, check, warnings_key="paramWarnings")
    registry.add("cstp.listGuardrails", ListRulesParams, list_rules)
    registry.add("cstp.preAction", PreActionParams, pre_action, writes=True)
