"""Lifecycle methods: ``setLifecycle`` (proposed, accepted, rejected) and ``forget``.

Both are logged writes. ``setLifecycle`` bringing a rejected decision back is gated like
``recordDecision`` (a refusal is the same ``-32004`` with the violations; ``override`` records
it anyway, and the event keeps the reason); ``forget`` cannot create a contradiction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases.inputs import ForgetNode, SetLifecycle

from .params import ID_ALIASES, Params, wire


class LifecycleParams(Params, SetLifecycle):
    model_config = wire(id=ID_ALIASES)


class ForgetParams(Params, ForgetNode):
    model_config = wire(id=ID_ALIASES)


def register_lifecycle(registry: Registry, app: usecases.Decigraph) -> None:
    def set_lifecycle(p: LifecycleParams, ctx: CallContext) -> Mapping[str, Any]:
        made = usecases.set_lifecycle(app, p, ctx.agent)
        verdict = made.verdict
        return {
            "success": True,
            "id": made.node.id,
            "lifecycle": made.lifecycle.value,
            "previousLifecycle": made.previous.value,
            "version": made.node.version,
            "gated": verdict is not None,
            "guardrailWarnings": [] if verdict is None else [w.to_dict() for w in verdict.warnings],
            "guardrailOverride": made.overridden,
        }

    def forget(p: ForgetParams, ctx: CallContext) -> Mapping[str, Any]:
        gone = usecases.forget(app, p, ctx.agent)
        return {
            "success": True,
            "id": gone.node.id,
            "kind": gone.node.kind.value,
            "edgesRemoved": gone.edges,
        }

    registry.add("cstp.setLifecycle", LifecycleParams, set_lifecycle, writes=True)
    registry.add("cstp.forget", ForgetParams, forget, writes=True)
