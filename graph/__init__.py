"""decigraph's domain core: the decision graph, its event log and its algorithms.

* :mod:`graph.model`, :mod:`graph.enums` - nodes, edges, edge types and relation families;
* :mod:`graph.store` - :class:`~graph.store.DecisionStore`, the event-sourced store;
* :mod:`graph.eventlog`, :mod:`graph.snapshot` - the log on disk and its snapshots;
* :mod:`graph.algorithms` - free functions over the store's ``MultiDiGraph``.

Nothing here imports a web framework or an embedding model.
"""

from .drafts import DecisionDraft, EdgeDraft, MemoryDraft
from .enums import EdgeType, Lifecycle, NodeKind, RelationFamily
from .errors import DecigraphError
from .model import Edge, Node
from .store import DecisionStore, StoreOptions

__all__ = [
    "DecigraphError",
    "DecisionDraft",
    "DecisionStore",
    "Edge",
    "EdgeDraft",
    "EdgeType",
    "Lifecycle",
    "MemoryDraft",
    "Node",
    "NodeKind",
    "RelationFamily",
    "StoreOptions",
]
