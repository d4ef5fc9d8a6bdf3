"""One exception hierarchy for the domain core.

Every error names the offending value (an id, a field, a path) so the service layer can map it to
a JSON-RPC error without re-deriving context. The service maps each class once; see
``service`` for the codes.
"""

from __future__ import annotations

from collections.abc import Sequence


class DecigraphError(Exception):
    """Base class of every error the domain core raises on purpose."""


class ValidationError(DecigraphError, ValueError):
    """A value is malformed or out of range; ``field`` names it (dotted path)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NodeNotFoundError(DecigraphError, LookupError):
    """An operation names a node id that does not exist."""

    def __init__(self, node_id: str, field: str = "id") -> None:
        super().__init__(f"{field}: no decision or memory item with id {node_id!r}")
        self.node_id = node_id
        self.field = field


class DuplicateIdError(DecigraphError):
    """A record or an import asks for an id that is already taken."""

    def __init__(self, node_id: str, detail: str | None = None) -> None:
        message = f"id: {node_id!r} already exists"
        super().__init__(f"{message} {detail}" if detail else message)
        self.node_id = node_id


class EdgeNotFoundError(DecigraphError, LookupError):
    """An unlink names an edge that does not exist."""

    def __init__(self, source: str, target: str, edge_type: str | None) -> None:
        kind = f"{edge_type!r} edge" if edge_type else "edge"
        super().__init__(f"no {kind} from {source!r} to {target!r}")
        self.source = source
        self.target = target
        self.edge_type = edge_type


class SelfLoopError(DecigraphError):
    """An edge would connect a node to itself."""

    def __init__(self, node_id: str, edge_type: str) -> None:
        super().__init__(f"targetId: a {edge_type!r} edge cannot connect {node_id!r} to itself")
        self.node_id = node_id
        self.edge_type = edge_type


class CycleError(DecigraphError):
    """An edge of an acyclic type would close a cycle; ``path`` is the cycle it would create."""

    def __init__(self, edge_type: str, path: Sequence[str]) -> None:
        shown = " -> ".join(path)
        super().__init__(f"edgeType: adding this {edge_type!r} edge would create a cycle: {shown}")
        self.edge_type = edge_type
        self.path = list(path)


class VersionConflictError(DecigraphError):
    """``expectedVersion`` did not match the node's current version (optimistic concurrency)."""

    def __init__(self, node_id: str, expected: int, current: int) -> None:
        super().__init__(
            f"expectedVersion: {node_id!r} is at version {current}, not {expected}; "
            "re-read it and retry"
        )
        self.node_id = node_id
        self.expected = expected
        self.current = current


class StoreLockedError(DecigraphError):
    """Another process holds the data directory open for writing."""

    def __init__(self, path: str, holder: str) -> None:
        super().__init__(
            f"data directory {path!r} is locked for writing by another process ({holder}); "
            "stop it, or open the store read-only"
        )
        self.path = path
        self.holder = holder


class ReadOnlyStoreError(DecigraphError):
    """A mutation was attempted on a store opened read-only."""

    def __init__(self, path: str) -> None:
        super().__init__(f"the store at {path!r} is open read-only")
        self.path = path


class LogCorruptedError(DecigraphError):
    """The event log fails verification at ``seq`` (line ``line``) for ``reason``."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}: line {line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class StorageError(DecigraphError, OSError):
    """Writing to disk failed (full disk, permissions); nothing was applied."""
