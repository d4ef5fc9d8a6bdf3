"""Closed vocabularies of the domain: node kinds, statuses, edge types and relation families."""

from __future__ import annotations

from enum import StrEnum


class NodeKind(StrEnum):
    """What a node holds: a decision, or a conversational memory item."""

    DECISION = "decision"
    OBSERVATION = "observation"
    FACT = "fact"
    THOUGHT = "thought"


class Category(StrEnum):
    ARCHITECTURE = "architecture"
    PROCESS = "process"
    INTEGRATION = "integration"
    TOOLING = "tooling"
    SECURITY = "security"


class Stakes(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class ReviewStatus(StrEnum):
    """CSTP's ``status``: has the outcome been reviewed yet."""

    PENDING = "pending"
    REVIEWED = "reviewed"


class Lifecycle(StrEnum):
    """3LG decision lifecycle.

    ``superseded`` is never stored: it is derived from an incoming ``supersedes`` edge, so
    unlinking a ``supersedes`` edge restores the node's stored lifecycle exactly.
    """

    PROPOSED = "proposed"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    SUPERSEDED = "superseded"


class Outcome(StrEnum):
    SUCCESS = "success"
    PARTIAL = "partial"
    FAILURE = "failure"
    ABANDONED = "abandoned"


class ReasonType(StrEnum):
    AUTHORITY = "authority"
    ANALOGY = "analogy"
    ANALYSIS = "analysis"
    PATTERN = "pattern"
    INTUITION = "intuition"
    EMPIRICAL = "empirical"
    ELIMINATION = "elimination"
    CONSTRAINT = "constraint"


class RelationFamily(StrEnum):
    """The four relation families that intent weighting (WHY/WHEN/ENTITY/GENERAL) works on."""

    CAUSAL = "causal"
    TEMPORAL = "temporal"
    ENTITY = "entity"
    SEMANTIC = "semantic"


class EdgeType(StrEnum):
    """Typed, directed edge kinds.

    The first seven are the decision-graph relations; the last four are the memory relations that
    retrieval derives automatically on write. ``A -> B`` reads as "A <type> B".
    """

    DEPENDS_ON = "depends_on"
    SUPERSEDES = "supersedes"
    CONTRADICTS = "contradicts"
    REFINES = "refines"
    RELATES_TO = "relates_to"
    CAUSED_BY = "caused_by"
    BLOCKS = "blocks"
    TEMPORAL = "temporal"
    ENTITY = "entity"
    SEMANTIC = "semantic"
    CAUSAL = "causal"

    @property
    def family(self) -> RelationFamily:
        return EDGE_FAMILY[self]

    @property
    def symmetric(self) -> bool:
        return self in SYMMETRIC_EDGE_TYPES

    @property
    def acyclic(self) -> bool:
        return self in ACYCLIC_EDGE_TYPES

    @property
    def derived(self) -> bool:
        """Derived on write (time, mentions, similarity, causal wording), not stated by anyone."""
        return self in DERIVED_EDGE_TYPES


EDGE_FAMILY: dict[EdgeType, RelationFamily] = {
    # Causal: edges that explain why something is the way it is.
    EdgeType.CAUSED_BY: RelationFamily.CAUSAL,
    EdgeType.CAUSAL: RelationFamily.CAUSAL,
    EdgeType.DEPENDS_ON: RelationFamily.CAUSAL,
    EdgeType.BLOCKS: RelationFamily.CAUSAL,
    # Temporal: ordering in time; a supersession is a "later replaces earlier" relation.
    EdgeType.TEMPORAL: RelationFamily.TEMPORAL,
    EdgeType.SUPERSEDES: RelationFamily.TEMPORAL,
    # Entity: shared subjects (people, systems, identifiers).
    EdgeType.ENTITY: RelationFamily.ENTITY,
    # Semantic: meaning-level relations, including disagreement about the same subject.
    EdgeType.SEMANTIC: RelationFamily.SEMANTIC,
    EdgeType.RELATES_TO: RelationFamily.SEMANTIC,
    EdgeType.REFINES: RelationFamily.SEMANTIC,
    EdgeType.CONTRADICTS: RelationFamily.SEMANTIC,
}

SYMMETRIC_EDGE_TYPES: frozenset[EdgeType] = frozenset(
    {
        EdgeType.CONTRADICTS,
        EdgeType.RELATES_TO,
        EdgeType.TEMPORAL,
        EdgeType.ENTITY,
        EdgeType.SEMANTIC,
    }
)

ACYCLIC_EDGE_TYPES: frozenset[EdgeType] = frozenset(
    {EdgeType.SUPERSEDES, EdgeType.DEPENDS_ON, EdgeType.BLOCKS}
)

#: The types :mod:`retrieval.autoedges` derives on write. Graph queries leave them out unless
#: asked (``includeDerived``); recall's graph expansion uses them.
DERIVED_EDGE_TYPES: frozenset[EdgeType] = frozenset(
    {EdgeType.TEMPORAL, EdgeType.ENTITY, EdgeType.SEMANTIC, EdgeType.CAUSAL}
)

#: The seven decision relations of the decision graph, in declaration order: what graph
#: queries walk by default.
DECISION_EDGE_TYPES: tuple[EdgeType, ...] = tuple(
    t for t in EdgeType if t not in DERIVED_EDGE_TYPES
)


class Direction(StrEnum):
    OUTGOING = "outgoing"
    INCOMING = "incoming"
    BOTH = "both"
