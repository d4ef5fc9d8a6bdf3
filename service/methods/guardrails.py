"""Guardrail methods: ``checkGuardrails`` (what-if), ``listGuardrails`` and ``preAction``.

``action`` takes every ``recordDecision`` field (``description`` is the statement; ``decision``
is accepted too), so what an agent checks is exactly what it would record.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from graph.model import MAX_PATTERN, MAX_REASONS, Reason, Tags
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases.gate import GRAPH_GUARDRAIL, graph_rule_description
from service.usecases.inputs import Input, ProposedAction
from service.usecases.rules import Check, Rule

from .decisions import recorded_view
from .params import Params, wire


class ActionParams(Params, ProposedAction):
    model_config = wire(text=("description", "decision"))


class CheckParams(Params):
    action: ActionParams


class PreActionOptions(Params):
    query_limit: int = Field(default=5, ge=0, le=50)
    auto_record: bool = False


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
    return {
        "allowed": verdict.allowed,
        "violations": [f.to_dict() for f in verdict.violations],
        "warnings": [f.to_dict() for f in verdict.warnings],
        "evaluated": verdict.evaluated,
        "evaluatedAt": datetime.now(UTC).isoformat(),
    }


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
        options = p.options or PreActionOptions()
        outcome = usecases.pre_action(
            app,
            p.merged_action(),
            ctx.agent,
            query_limit=options.query_limit,
            auto_record=options.auto_record,
        )
        relevant = []
        if outcome.relevant is not None:
            for hit in outcome.relevant.result.hits:
                node = outcome.relevant.nodes.get(hit.id)
                if node is not None:
                    relevant.append({"id": node.id, "title": node.text, "score": hit.score})
        verdict = outcome.verdict
        result: dict[str, Any] = {
            "allowed": verdict.allowed,
            "relevantDecisions": relevant,
            "guardrailResults": [f.to_dict() for f in verdict.findings()],
            "decisionId": None,
        }
        if not verdict.allowed:
            result["blockReasons"] = [v.message for v in verdict.violations]
        if outcome.recorded is not None:
            made = recorded_view(outcome.recorded)
            result["decisionId"] = made["id"]
            result["quality"] = made["quality"]
            result["guardrailOverride"] = made["guardrail_override"]
            result["suggestions"] = made["suggestions"]
        return result

    # Its answer's ``warnings`` are the guardrails' (CSTP): ignored params go beside them.
    registry.add("cstp.checkGuardrails", CheckParams, check, warnings_key="paramWarnings")
    registry.add("cstp.listGuardrails", ListRulesParams, list_rules)
    registry.add("cstp.preAction", PreActionParams, pre_action, writes=True)
