"""Every ``cstp.*`` JSON-RPC method: one module per group, each handler a thin translation
between wire params (:mod:`.params`) and one use case (:mod:`service.usecases`)."""

from __future__ import annotations

from service.rpc.protocol import Registry
from service.usecases import Decigraph

from .agents import register_agents
from .analytics import register_analytics
from .breakers import register_breakers
from .compaction import register_compaction
from .decisions import register_decisions
from .events import register_events
from .evidence import register_evidence
from .graph import register_graph
from .guardrails import register_guardrails
from .history import register_history
from .lifecycle import register_lifecycle
from .memory import register_memory
from .querying import register_query
from .replication import register_replication
from .tracker import register_tracker


def build_registry(app: Decigraph) -> Registry:
    """A registry holding every ``cstp.*`` method, served by ``app``.

    The HTTP route, the in-process client of the CLI and the notebook API dispatch through
    the same registry, so each sees exactly what an agent sees over the wire.
    """
    registry = Registry()
    register_decisions(registry, app)
    register_query(registry, app)
    register_lifecycle(registry, app)
    register_memory(registry, app)
    register_graph(registry, app)
    register_guardrails(registry, app)
    register_agents(registry, app)
    register_analytics(registry, app)
    register_compaction(registry, app)
    register_breakers(registry, app)
    register_evidence(registry, app)
    register_tracker(registry, app)
    register_replication(registry, app)
    register_events(registry, app)
    register_history(registry, app)
    return registry
