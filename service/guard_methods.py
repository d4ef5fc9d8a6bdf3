"""checkGuardrails, listGuardrails and preAction: the gate, callable before acting."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from graph.drafts import DecisionDraft
from graph.enums import Category, Stakes
from retrieval.query import query_decisions
from retrieval.writes import record

from .application import Decigraph
from .gate import check_action
from .methods import Params, quality
from .rpc import CallContext, Registry


class ActionSpec(Params):
    description: str = Field(min_length=1, max_length=10_000)
    category: Category | None = None
    stakes: Stakes | None = None
    confidence: float | None = Field(default=None, ge=0, le=1)
    context: dict[str, Any] | str | None = None
    tags: list[str] = Field(default_factory=list)
    reasons: list[dict[str, Any]] = Field(default_factory=list)
    project: str | None = None
    contradicts: list[str] = Field(default_factory=list)


class CheckParams(Params):
    action: ActionSpec


class PreActionOptions(Params):
    query_limit: int = Field(default=5, ge=0, le=50)
    auto_record: bool = False


class PreActionParams(Params):
    action: ActionSpec
    options: PreActionOptions = Field(default_factory=PreActionOptions)


class NoParams(Params):
    pass


def verdict_view(action: ActionSpec, app: Decigraph) -> dict[str, Any]:
    fields = action.model_dump(mode="json", exclude_none=True)
    verdict = check_action(app, fields, action.contradicts)
    return {
        "allowed": verdict.allowed,
        "violations": [f.to_dict() for f in verdict.violations],
        "warnings": [f.to_dict() for f in verdict.warnings],
        "evaluated": verdict.evaluated,
        "evaluatedAt": datetime.now(UTC).isoformat(),
    }


def register_guards(registry: Registry, app: Decigraph) -> None:
    def check(p: CheckParams, ctx: CallContext) -> Mapping[str, Any]:
        return verdict_view(p.action, app)

    def list_rules(p: NoParams, ctx: CallContext) -> Mapping[str, Any]:
        rules = [
            {
                "id": r.id,
                "description": r.description,
                "action": r.action,
                "scope": r.scope,
                "conditions": [c.model_dump() for c in r.conditions],
                "requirements": [c.model_dump() for c in r.requirements],
            }
            for r in app.rules
        ]
        graph_rule = {
            "id": "graph-contradiction",
            "description": "Block contradicting an active decision whose salience exceeds "
            f"{app.settings.salience_threshold}",
            "action": "block",
            "scope": {},
            "conditions": [],
            "requirements": [],
        }
        return {"guardrails": [*rules, graph_rule], "count": len(rules) + 1}

    def pre_action(p: PreActionParams, ctx: CallContext) -> Mapping[str, Any]:
        verdict = verdict_view(p.action, app)
        relevant: list[dict[str, Any]] = []
        if p.options.query_limit:
            hits = query_decisions(app.index, p.action.description, "hybrid", p.options.query_limit)
            for hit in hits.hits:
                node = app.store.get(hit.id)
                relevant.append({"id": node.id, "title": node.text, "score": hit.score})
        result: dict[str, Any] = {
            "allowed": verdict["allowed"],
            "relevantDecisions": relevant,
            "guardrailResults": verdict["violations"] + verdict["warnings"],
        }
        if not verdict["allowed"]:
            result["blockReasons"] = [v["message"] for v in verdict["violations"]]
        elif p.options.auto_record:
            draft = DecisionDraft(
                text=p.action.description,
                category=p.action.category,
                stakes=p.action.stakes,
                confidence=p.action.confidence,
                tags=p.action.tags,
                project=p.action.project,
                context=p.action.context if isinstance(p.action.context, str) else None,
            )
            made = record(app.index, draft, ctx.agent, app.auto_edges)
            result["decisionId"] = made.node.id
            result["quality"] = quality(made.node)
        return result

    registry.add("cstp.checkGuardrails", CheckParams, check)
    registry.add("cstp.listGuardrails", NoParams, list_rules)
    registry.add("cstp.preAction", PreActionParams, pre_action, writes=True)
