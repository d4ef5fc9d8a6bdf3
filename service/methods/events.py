"""``listEvents``: the change feed as pages of the log (:mod:`service.usecases.feed`).

Params: ``after`` (a seq, default 0), ``before`` (optional upper bound, exclusive), ``limit``
(1..1000, default 50; clamped with a warning like every ``limit``), ``order`` (``asc``: the
oldest matching events after ``after``, oldest first; ``desc``: the newest, newest first),
``ops``, ``nodeId``, ``project``. The answer: ``events`` (``seq, id, ts, actor, op, nodeIds,
summary``), ``head`` (the store's seq), ``nextAfter`` (continue ascending with
``after=nextAfter``; done when it equals ``head``) and, for ``desc``, ``nextBefore``
(continue descending with ``before=nextBefore``; ``null``: nothing older).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.rpc.protocol import CallContext, Registry
from service.usecases.context import Decigraph
from service.usecases.feed import ListEvents, list_events

from .params import Params


class ListEventsParams(Params, ListEvents):
    pass


def register_events(registry: Registry, app: Decigraph) -> None:
    def list_events_method(p: ListEventsParams, ctx: CallContext) -> Mapping[str, Any]:
        return list_events(app, p).to_dict()

    registry.add("cstp.listEvents", ListEventsParams, list_events_method)
