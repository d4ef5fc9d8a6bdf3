"""Every JSON-RPC method of the service, bound to one application.

The HTTP route and the in-process notebook client (``service/analyst.py``) dispatch through
the same registry, so a notebook sees exactly what an agent sees over the wire.
"""

from __future__ import annotations

from .agent_methods import register_agent
from .application import Decigraph
from .graph_methods import register_graph
from .guard_methods import register_guards
from .listing import register_listing
from .methods import register
from .rpc import Registry


def build_registry(app: Decigraph) -> Registry:
    """A registry holding every ``cstp.*`` method, served by ``app``."""
    registry = Registry()
    register(registry, app)
    register_graph(registry, app)
    register_listing(registry, app)
    register_guards(registry, app)
    register_agent(registry, app)
    return registry
