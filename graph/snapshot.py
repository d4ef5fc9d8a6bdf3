"""Snapshots: the materialised graph at a sequence number, so start-up replays only the tail.

File layout: one header line (canonical JSON: format, seq, log offset, last event hash, graph
hash, body SHA-256) and one body line (nodes and edges in graph order). Written to a temporary
file, fsync-ed, then renamed over the old snapshot, so a crash leaves the old one or the new one,
never half of either. A snapshot that fails its checksum is ignored and the log is replayed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import orjson

from .canonical import canonical_json, sha256_hex

SNAPSHOT_FORMAT = 1


@dataclass(frozen=True, slots=True)
class SnapshotHeader:
    seq: int
    log_offset: int
    last_hash: str
    graph_hash: str


def write_snapshot(path: Path, G: nx.MultiDiGraph, header: SnapshotHeader) -> None:
    body = orjson.dumps(
        {
            "nodes": [[node_id, attrs] for node_id, attrs in G.nodes(data=True)],
            "edges": [[u, v, key, attrs] for u, v, key, attrs in G.edges(keys=True, data=True)],
        }
    )
    head = canonical_json(
        {
            "format": SNAPSHOT_FORMAT,
            "seq": header.seq,
            "logOffset": header.log_offset,
            "lastHash": header.last_hash,
            "graphHash": header.graph_hash,
            "bodySha256": sha256_hex(body),
        }
    )
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as handle:
        handle.write(head + b"\n" + body + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_snapshot(path: Path) -> tuple[SnapshotHeader, nx.MultiDiGraph] | None:
    """The snapshot's header and graph, or ``None`` if it is missing, foreign or damaged."""
    try:
        with path.open("rb") as handle:
            head: dict[str, Any] = orjson.loads(handle.readline())
            body = handle.readline().rstrip(b"\n")
    except (OSError, orjson.JSONDecodeError):
        return None
    if head.get("format") != SNAPSHOT_FORMAT or head.get("bodySha256") != sha256_hex(body):
        return None
    data = orjson.loads(body)
    G = nx.MultiDiGraph()
    G.add_nodes_from((node_id, attrs) for node_id, attrs in data["nodes"])
    G.add_edges_from((u, v, key, attrs) for u, v, key, attrs in data["edges"])
    header = SnapshotHeader(
        seq=int(head["seq"]),
        log_offset=int(head["logOffset"]),
        last_hash=str(head["lastHash"]),
        graph_hash=str(head["graphHash"]),
    )
    return header, G
