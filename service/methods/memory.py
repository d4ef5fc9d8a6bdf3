"""Memory methods: ``remember`` (store a conversational item) and ``recall`` (intent-weighted
hybrid recall over decisions and memory)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graph.drafts import MemoryDraft
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases.inputs import RecallQuery

from .history import at_of, stamped
from .params import Params, TimeParams
from .views import recall_view, suggestion_view


class RememberParams(Params, MemoryDraft):
    pass


class RecallParams(Params, RecallQuery, TimeParams):
    include_reasons: bool = False


def register_memory(registry: Registry, app: usecases.Decigraph) -> None:
    def remember(p: RememberParams, ctx: CallContext) -> Mapping[str, Any]:
        made = usecases.remember_item(app, p, ctx.agent)
        return {
            "id": made.node.id,
            "created": made.created,
            "updated": made.updated,  # fields a re-send under a known id changed (logged)
            "version": made.node.version,
            "edgesCreated": len(made.edges),
            "edges": [
                {
                    "targetId": e.target,
                    "edgeType": e.type,
                    "weight": e.weight,
                    "signal": e.meta.get("signal"),
                }
                for e in made.edges
            ],
            "candidates": [suggestion_view(s) for s in made.suggestions],
        }

    def recall(p: RecallParams, ctx: CallContext) -> Mapping[str, Any]:
        at, point = at_of(app, p)
        answer = recall_view(usecases.recall_items(app, p, at), p.include_reasons, p.explain)
        return stamped(answer, p, point)

    registry.add("cstp.remember", RememberParams, remember, writes=True)
    registry.add("cstp.recall", RecallParams, recall)
