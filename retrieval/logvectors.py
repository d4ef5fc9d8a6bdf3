"""Vectors kept in a shared event log beside the events, so no replica embeds a text twice.

A writer stores the vectors its write embedded with the event (keyed by the SHA-256 of the
embedded text); a replica applying that event, or catching up from nothing, takes them from
the log instead of running the model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np

from graph.eventstore import EventStore
from graph.model import Node

from .matrix import Vector
from .text import embedding_text


def text_sha(text: str) -> str:
    """The key a text's vector is stored under (SHA-256 hex of the embedded text)."""
    return hashlib.sha256(text.encode()).hexdigest()


def encode(vectors: Mapping[str, Vector]) -> dict[str, bytes]:
    """``{text: vector}`` as the log stores it: ``{text_sha: float32 bytes}``."""
    return {
        text_sha(text): np.asarray(vector, dtype=np.float32).tobytes()
        for text, vector in vectors.items()
    }


def decode(stored: Mapping[str, bytes], text: str, dimension: int) -> Vector | None:
    """The vector stored for ``text``, if there is one of the right size."""
    raw = stored.get(text_sha(text)) if stored else None
    if raw is None or len(raw) != 4 * dimension:
        return None
    return np.frombuffer(raw, dtype=np.float32).copy()


def lookup(log: EventStore, nodes: Sequence[Node], dimension: int) -> dict[str, Vector]:
    """``{node id: vector}`` for the nodes whose embedded text has a vector in ``log``."""
    if not nodes or not log.shared:
        return {}
    texts = {node.id: embedding_text(node) for node in nodes}
    stored = log.lookup_vectors(sorted({text_sha(t) for t in texts.values()}))
    found = {node_id: decode(stored, text, dimension) for node_id, text in texts.items()}
    return {node_id: vector for node_id, vector in found.items() if vector is not None}
