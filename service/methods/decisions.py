"""Decision methods: record, get, query, update, review, list and count.

Each handler takes validated params, calls one use case and shapes its result the way CSTP's
clients read it: camelCase, except ``recordDecision`` which CSTP answers in snake_case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson
from pydantic import Field, field_validator

from graph.errors import ValidationError as DomainValidationError
from graph.model import ShortText, extras_problem
from graph.timeutil import UtcDatetime, format_ts
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases import maintenance, tracker
from service.usecases.compaction import compaction_level
from service.usecases.inputs import (
    DecisionChanges,
    DecisionListing,
    RecordDecision,
    ReviewDecision,
    UpdateDecision,
    end_of_day,
)

from .history import at_of, stamped
from .params import ID_ALIASES, NoParams, Params, TimeParams, wire
from .views import decision_view, quality, suggestion_view


class ProjectContext(Params):
    """Where a decision was made, as CSTP's CLI sends it (``record --project --pr``)."""

    project: ShortText | None = None
    feature: ShortText | None = None
    pr: int | ShortText | None = None
    file: ShortText | None = None
    line: int | None = Field(default=None, ge=0)
    commit: ShortText | None = None


class CstpRecordFields(Params):
    """What CSTP's clients send with a decision beyond decigraph's own fields: kept verbatim on
    the decision (``extras``) and returned by getDecision, or mapped where they mean something
    here (``project_context`` fills project, feature and pr)."""

    project_context: ProjectContext | None = None
    pr: int | ShortText | None = None
    file: ShortText | None = None
    line: int | None = Field(default=None, ge=0)
    commit: ShortText | None = None
    deliberation: dict[str, Any] | None = None
    trace: list[dict[str, Any]] | None = Field(default=None, max_length=200)
    mental_state: (
        Literal["deliberate", "reactive", "exploratory", "habitual", "pressured"] | None
    ) = None
    pre_decision: dict[str, Any] | None = None
    kpi_indicators: list[ShortText] | None = Field(default=None, max_length=100)

    @field_validator("deliberation", "trace", "pre_decision")
    @classmethod
    def _storable_json(cls, value: Any) -> Any:
        """Free-form objects are kept as given: they must be JSON the log can hold."""
        problem = extras_problem(value) if value is not None else None
        if problem is not None:
            raise ValueError(problem)
        return value

    #: Scope the deliberation-tracker session consumed (CSTP); never an identity.
    agent_id: ShortText | None = None
    decision_id: ShortText | None = None

    def cstp_fields(self) -> dict[str, Any]:
        """The domain fields these mean: ``project``/``feature``/``pr`` from the project
        context (top-level values win), the rest as ``extras``."""
        where = self.project_context or ProjectContext()
        pr = self.pr if self.pr is not None else where.pr
        extras = {
            "file": self.file or where.file,
            "line": self.line if self.line is not None else where.line,
            "commit": self.commit or where.commit,
            "deliberation": self.deliberation,
            "trace": self.trace,
            "mental_state": self.mental_state,
            "pre_decision": self.pre_decision,
            "kpi_indicators": self.kpi_indicators,
        }
        fields: dict[str, Any] = {
            "pr": None if pr is None else str(pr),
            "extras": {k: v for k, v in extras.items() if v not in (None, [], {})} or None,
        }
        if where.project is not None:
            fields["project"] = where.project
        if where.feature is not None:
            fields["feature"] = where.feature
        return fields


class RecordParams(CstpRecordFields, RecordDecision):
    model_config = wire(text="decision", occurred_at=("occurredAt", "validFrom"))

    #: Every quality suggestion in the answer (default: the single most useful one).
    include_suggestions: bool = False

    def command(self) -> RecordDecision:
        """The use case's input: CSTP's fields mapped onto decigraph's (given ones win).

        Raises :class:`~graph.errors.ValidationError` naming the largest field when together
        they do not fit the decision (:func:`graph.model.extras_problem`): the copy below is
        not validated again, and a stored node must replay."""
        mapped = self.cstp_fields()
        for key in ("project", "feature"):
            if getattr(self, key) is not None:
                mapped.pop(key, None)
        if self.extras:  # a decigraph client's own extras, beside CSTP's
            mapped["extras"] = {**self.extras, **(mapped["extras"] or {})}
        extras = mapped["extras"]
        problem = extras_problem(extras) if extras else None
        if problem is not None:
            largest = max(extras, key=lambda key: len(orjson.dumps(extras[key])))
            raise DomainValidationError(largest, f"with the other client fields {problem}")
        return self.model_copy(update=mapped)


class IdParams(Params):
    model_config = wire(id=ID_ALIASES)

    id: str


class GetParams(IdParams, TimeParams):
    pass


class UpdateFields(Params, DecisionChanges):
    model_config = wire(text="decision")


class UpdateParams(Params, UpdateDecision):
    model_config = wire(id=ID_ALIASES, changes="updates")

    changes: UpdateFields = Field(default_factory=UpdateFields)


class ReviewParams(Params, ReviewDecision):
    model_config = wire(id=ID_ALIASES)


class ListParams(Params, DecisionListing, TimeParams):
    pass


class StatsParams(Params):
    project: str | None = None
    date_from: UtcDatetime | None = None
    date_to: UtcDatetime | None = None

    @field_validator("date_to", mode="before")
    @classmethod
    def _whole_day(cls, value: Any) -> Any:
        return end_of_day(value)


def recorded_view(made: usecases.Recorded, every_suggestion: bool = False) -> dict[str, Any]:
    """The ``recordDecision`` answer (CSTP's snake_case; the deliberation keys say what the
    tracker attached, as CSTP's CLI reads them). ``quality.suggestions`` names the most useful
    missing part only, unless ``every_suggestion``."""
    node = made.node
    extras = node.extras or {}
    deliberation = extras.get("deliberation")
    inputs = deliberation.get("inputs") if isinstance(deliberation, dict) else None
    related = extras.get("related_to")
    return {
        "deliberation_auto": bool(extras.get("deliberation_auto")),
        "deliberation_inputs_count": len(inputs) if isinstance(inputs, list) else 0,
        "related_count": len(related) if isinstance(related, list) else 0,
        "bridge_auto": False,
        "success": True,
        "id": node.id,
        "indexed": True,
        "timestamp": format_ts(node.created_at),
        "quality": quality(node, every_suggestion),
        "graph_edges_created": len(made.edges),
        "suggestions": [suggestion_view(s) for s in made.suggestions],
        "guardrail_warnings": [w.to_dict() for w in made.verdict.warnings],
        "guardrail_override": made.overridden,
        **conflicts_field(made.verdict),
    }


def conflicts_field(verdict: usecases.Verdict | None) -> dict[str, Any]:
    """``conflicts``: the pairs the judge raised (only when there are any)."""
    if verdict is None or not verdict.conflicts:
        return {}
    return {"conflicts": [c.to_view() for c in verdict.conflicts]}


def register_decisions(registry: Registry, app: usecases.Decigraph) -> None:
    def record(p: RecordParams, ctx: CallContext) -> Mapping[str, Any]:
        cmd = tracker.attach_deliberation(
            app,
            p.command(),
            agent=ctx.agent,
            agent_id=p.agent_id,
            decision_id=p.decision_id,
            session=ctx.session,
        )
        made = usecases.record_decision(app, cmd, ctx.agent)
        return recorded_view(made, p.include_suggestions)

    def get(p: GetParams, ctx: CallContext) -> Mapping[str, Any]:
        at, point = at_of(app, p)
        read = usecases.read_node(app, p.id, at)
        if read is None:
            return stamped({"found": False, "id": p.id}, p, point)
        return stamped({"found": True, "decision": decision_view(read)}, p, point)

    def update(p: UpdateParams, ctx: CallContext) -> Mapping[str, Any]:
        made = usecases.update_decision(app, p, ctx.agent)
        fields = UpdateFields.model_fields
        changed = sorted(fields[name].alias or name for name in made.fields)
        result: dict[str, Any] = {
            "success": True,
            "id": made.node.id,
            "updated_fields": changed,  # CSTP: the fields applied (those whose value changed)
            "changed": changed,
            "version": made.node.version,
        }
        if made.verdict is not None:
            result["guardrail_warnings"] = [w.to_dict() for w in made.verdict.warnings]
            result["guardrail_override"] = made.overridden
            result.update(conflicts_field(made.verdict))
        return result

    def review(p: ReviewParams, ctx: CallContext) -> Mapping[str, Any]:
        node = usecases.review_decision(app, p, ctx.agent)
        reviewed = format_ts(node.reviewed_at) if node.reviewed_at else None
        return {
            "success": True,
            "id": node.id,
            "status": node.status,
            "reviewedAt": reviewed,
            "reindexed": True,  # the index follows the log: the review is searchable now
            "compactionLevel": compaction_level(app, node),
        }

    def list_(p: ListParams, ctx: CallContext) -> Mapping[str, Any]:
        at, point = at_of(app, p)
        page, total = usecases.list_decisions(app, p, at=at)
        answer = {
            "decisions": [decision_view(read) for read in page],
            "total": total,
            "limit": p.limit,
            "offset": p.offset,
        }
        return stamped(answer, p, point)

    def stats(p: StatsParams, ctx: CallContext) -> Mapping[str, Any]:
        counts = usecases.count_decisions(app, p.project, p.date_from, p.date_to)
        days = sorted(counts.by["day"].items(), reverse=True)[:30]
        return {
            "recentActivity": counts.recent,
            "total": counts.total,
            "byCategory": counts.by["category"],
            "byStakes": counts.by["stakes"],
            "byStatus": counts.by["status"],
            "byLifecycle": counts.by["lifecycle"],
            "byAgent": counts.by["agent"],
            "byDay": [{"date": day, "count": n} for day, n in days],
            "topTags": [{"tag": tag, "count": n} for tag, n in counts.top_tags],
        }

    registry.add("cstp.recordDecision", RecordParams, record, writes=True)
    registry.add("cstp.getDecision", GetParams, get)
    registry.add("cstp.updateDecision", UpdateParams, update, writes=True)
    registry.add("cstp.reviewDecision", ReviewParams, review, writes=True)

    def reindex(p: NoParams, ctx: CallContext) -> Mapping[str, Any]:
        done = maintenance.reindex(app)
        return {
            "success": True,
            "decisionsIndexed": done.decisions,
            "itemsEmbedded": done.embedded,
            "errors": 0,
            "durationMs": done.duration_ms,
            "message": (
                f"Indexed {done.decisions} decisions with 0 errors in {done.duration_ms}ms"
                if done.decisions
                else "No decisions found to index"
            ),
        }

    registry.add("cstp.reindex", NoParams, reindex)
    registry.add("cstp.listDecisions", ListParams, list_)
    registry.add("cstp.getStats", StatsParams, stats)
