"""What the indexes derive from a node or an event: fingerprints, content keys, time keys and
the nodes an event touched (pure functions of the graph's values)."""

from __future__ import annotations

import hashlib

from graph.events import Event, touched_ids
from graph.model import Node
from graph.timeutil import parse_ts

from .entities import entity_keys
from .filters import node_time, vector_metadata
from .structures import TimeKey
from .text import embedding_text


def fingerprint(node: Node) -> str:
    """Hash of what the vector index derives from a node (text embedded and filter metadata)."""
    attrs = node.to_attrs()
    meta = vector_metadata(attrs, parse_ts(node_time(attrs)))
    material = repr((embedding_text(node), sorted(meta.items())))
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def content_key(kind: str, text: str, source: str | None, when: str | None) -> str:
    """Identity of a memory item's content: the same words from the same source at the same time."""
    material = repr((kind, " ".join(text.split()), source, when))
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def node_content_key(node: Node) -> str:
    when = node.to_attrs().get("occurred_at")
    return content_key(str(node.kind), node.text, node.source, when)


def node_entities(node: Node) -> list[str]:
    """Entity keys of a node: explicit entities, its source, and those found in its text."""
    explicit = [*node.entities, *([node.source] if node.source else [])]
    return entity_keys(node.text, explicit)


def time_key(node: Node) -> TimeKey:
    attrs = node.to_attrs()
    return (node_time(attrs), str(attrs["created_at"]), node.id)


def touched_nodes(event: Event) -> list[str]:
    """Ids of the nodes whose indexed form an event can change."""
    return touched_ids(event.payload)
