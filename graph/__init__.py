"""decigraph's domain core: the decision graph, its event log and its algorithms.

* :mod:`graph.model`, :mod:`graph.enums` - nodes, edges, edge types and relation families;
* :mod:`graph.store` - :class:`~graph.store.DecisionStore`, the event-sourced store;
* :mod:`graph.eventlog`, :mod:`graph.snapshot` - the log on disk and its snapshots;
* :mod:`graph.algorithms` - free functions over the store's ``MultiDiGraph``.

Nothing here imports a web framework or an embedding model. The names below are loaded on
first use (PEP 562), so importing one light module (``graph.errors``) does not load the store,
NetworkX and SciPy: ``decigraph recall`` against a running server stays a small process.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .drafts import DecisionDraft, EdgeDraft, MemoryDraft
    from .enums import EdgeType, Lifecycle, NodeKind, RelationFamily
    from .errors import DecigraphError
    from .model import Edge, Node
    from .store import DecisionStore, StoreOptions

#: Each exported name and the module that defines it.
_HOMES = {
    "DecigraphError": "errors",
    "DecisionDraft": "drafts",
    "DecisionStore": "store",
    "Edge": "model",
    "EdgeDraft": "drafts",
    "EdgeType": "enums",
    "Lifecycle": "enums",
    "MemoryDraft": "drafts",
    "Node": "model",
    "NodeKind": "enums",
    "RelationFamily": "enums",
    "StoreOptions": "store",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
