"""One exception hierarchy for the domain core.

Every error names the offending value (an id, a field, a path) so the service layer can map it to
a JSON-RPC error without re-deriving context. Errors about one input field derive from
:class:`FieldError` and name it in domain words (snake_case attribute names), never wire names.
The service maps each class once (and each field to its wire name); see ``service``.
"""

from __future__ import annotations

from collections.abc import Sequence


class DecigraphError(Exception):
    """Base class of every error the domain core raises on purpose."""


class FieldError(DecigraphError):
    """An error about one input field: ``str(exc)`` is ``f"{field}: {detail}"``.

    ``field`` is a dotted path in the domain's own words (``source``, ``target``, ``type``,
    ``external_id``, ``expected_version``, ``changes.confidence``, ``edges.0.target``); the
    transport maps it to its wire names. ``detail`` is the message without the field.
    """

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail

    @property
    def message(self) -> str:
        """The same as :attr:`detail` (the older name)."""
        return self.detail


class ValidationError(FieldError, ValueError):
    """A value is malformed or out of range; ``field`` names it (dotted path)."""


class NodeNotFoundError(FieldError, LookupError):
    """An operation names a node id that does not exist; ``field`` is where it was named."""

    def __init__(self, node_id: str, field: str = "id") -> None:
        super().__init__(field, f"no decision or memory item with id {node_id!r}")
        self.node_id = node_id


class DuplicateIdError(FieldError):
    """A record or an import asks for an id that is already taken (``field`` is ``id``)."""

    def __init__(self, node_id: str, reason: str | None = None) -> None:
        detail = f"{node_id!r} already exists"
        super().__init__("id", f"{detail} {reason}" if reason else detail)
        self.node_id = node_id


class EdgeNotFoundError(FieldError, LookupError):
    """An unlink names an edge that does not exist.

    ``field`` is ``type`` when a type was named (no edge of that type), else ``target`` (no
    edge at all from ``source`` to ``target``).
    """

    def __init__(self, source: str, target: str, edge_type: str | None) -> None:
        kind = f"{edge_type!r} edge" if edge_type else "edge"
        super().__init__(
            "type" if edge_type else "target", f"no {kind} from {source!r} to {target!r}"
        )
        self.source = source
        self.target = target
        self.edge_type = edge_type


class SelfLoopError(FieldError):
    """An edge would connect a node to itself (``field`` is ``target``)."""

    def __init__(self, node_id: str, edge_type: str) -> None:
        super().__init__("target", f"a {edge_type!r} edge cannot connect {node_id!r} to itself")
        self.node_id = node_id
        self.edge_type = edge_type


class CycleError(FieldError):
    """An edge of an acyclic type would close a cycle; ``path`` is the cycle it would create.

    ``field`` is ``type``: the edge is refused because of its type.
    """

    def __init__(self, edge_type: str, path: Sequence[str]) -> None:
        shown = " -> ".join(path)
        super().__init__("type", f"adding this {edge_type!r} edge would create a cycle: {shown}")
        self.edge_type = edge_type
        self.path = list(path)


class VersionConflictError(FieldError):
    """``expected_version`` did not match the node's current version (optimistic concurrency)."""

    def __init__(self, node_id: str, expected: int, current: int) -> None:
        super().__init__(
            "expected_version",
            f"{node_id!r} is at version {current}, not {expected}; re-read it and retry",
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


class BackendUnavailableError(DecigraphError):
    """A backend the store depends on (e.g. the vector database) failed or is unreachable.

    Retryable: nothing the caller sent was wrong, and the same call may succeed later.
    """


class EventStoreError(DecigraphError):
    """The shared event log (PostgreSQL) could not take or serve a request. Retryable."""

    retryable = True


class EventStoreUnavailableError(EventStoreError):
    """The event store cannot be reached (connection refused or lost, a failover under way);
    nothing was written."""

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"the event store {location} is unavailable: {reason}")
        self.location = location
        self.reason = reason


class EventStoreBusyError(EventStoreError):
    """Another replica held the log's head longer than the lock timeout; nothing was written.

    It happens when a commit waits for a synchronous standby that does not answer."""

    def __init__(self, location: str, seconds: float) -> None:
        super().__init__(
            f"the event store {location} is busy: another write held the log's head for "
            f"{seconds:g} s (a commit waiting for its synchronous standby?); nothing was written"
        )
        self.location = location


class CommitOutcomeUnknownError(EventStoreError):
    """A commit was sent but its outcome could not be learned in time (the synchronous
    standby did not answer, or the connection broke while committing).

    The event ``event_id`` (``seq``) may or may not be in the log: it will be visible once the
    database settles, and never half-written. Resolve it by the event id (or the decision id)
    before retrying, so the write is not made twice."""

    def __init__(self, location: str, event_id: str, seq: int, reason: str) -> None:
        super().__init__(
            f"the outcome of event {event_id} (seq {seq}) is unknown: {reason}; look it up by "
            "its id before retrying"
        )
        self.location = location
        self.event_id = event_id
        self.seq = seq
        self.reason = reason
        #: The node the event would have created or changed (set by the store).
        self.node_id: str | None = None


class LogDivergedError(LogCorruptedError):
    """The shared log no longer holds the history this replica applied (a restore from an
    older backup, or a failover that lost acknowledged events): the replica rebuilds its
    views from the log as it now is."""


class NotCaughtUpError(DecigraphError):
    """A read asked for ``minSeq`` and this replica had not applied it in time. Retryable."""

    retryable = True

    def __init__(self, wanted: int, applied: int, seconds: float) -> None:
        super().__init__(
            f"this replica has applied events up to {applied}, not yet {wanted}, after "
            f"waiting {seconds:g} s; retry (or ask another replica)"
        )
        self.wanted = wanted
        self.applied = applied
