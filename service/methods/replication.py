"""``getReplicaStatus``: where this replica stands (seq, last hash, graph hash, the log's head);
``getEvent``: look an event up in the log by id (how a client resolves a write whose
commit outcome was unknown), and the read-your-writes hooks every method runs through
(``seq`` on write answers, ``minSeq`` on any call: :mod:`service.usecases.replication`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.rpc.protocol import CallContext, Registry
from service.usecases.context import Decigraph
from service.usecases.inputs import FindEvent
from service.usecases.replication import ReplicaConsistency, find_event, replica_status

from .params import Params, wire


class EventParams(Params, FindEvent):
    model_config = wire(event_id=("eventId", "event_id", "id"))


def register_replication(registry: Registry, app: Decigraph) -> None:
    registry.consistency = ReplicaConsistency(app)

    def get_event(p: EventParams, ctx: CallContext) -> Mapping[str, Any]:
        return find_event(app, p.event_id).to_dict()

    def get_replica_status(p: Params, ctx: CallContext) -> Mapping[str, Any]:
        return replica_status(app).to_dict()

    registry.add("cstp.getEvent", EventParams, get_event)
    registry.add("cstp.getReplicaStatus", Params, get_replica_status)
