"""Graph exports: D3 node-link JSON, GraphML, a Cypher script and CSV.

All exports are deterministic (nodes by id, edges by (source, target, type)) and carry every
stored attribute. Formats without nested values (GraphML, CSV, Cypher properties) hold lists
and objects as JSON text, which :func:`attrs_from_flat` turns back.

Examples
--------
>>> from graph.builders import build_graph
>>> G = build_graph(["aaaaaaaa", "bbbbbbbb"], [("aaaaaaaa", "bbbbbbbb", "depends_on")])
>>> doc = to_node_link(G)
>>> [n["id"] for n in doc["nodes"]], doc["links"][0]["type"]
(['aaaaaaaa', 'bbbbbbbb'], 'depends_on')
>>> print(to_cypher(G).splitlines()[0])
// decigraph export: 2 nodes, 1 relationships
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection
from typing import Any

import networkx as nx

from .errors import ValidationError

EXPORT_FORMATS = ("json", "d3", "graphml", "cypher", "csv")


def _nodes(G: nx.MultiDiGraph[str]) -> list[tuple[str, dict[str, Any]]]:
    return [(node_id, dict(G.nodes[node_id])) for node_id in sorted(G.nodes)]


def _edges(G: nx.MultiDiGraph[str]) -> list[tuple[str, str, str, dict[str, Any]]]:
    return sorted(
        ((u, v, str(k), dict(d)) for u, v, k, d in G.edges(keys=True, data=True)),
        key=lambda e: e[:3],
    )


def to_node_link(G: nx.MultiDiGraph[str]) -> dict[str, Any]:
    """D3's node-link shape: ``{"nodes": [{id, ...}], "links": [{source, target, type, ...}]}``.

    Symmetric edges are stored in both directions and exported as stored (both links).
    """
    return {
        "directed": True,
        "multigraph": True,
        "nodes": [{"id": node_id, **attrs} for node_id, attrs in _nodes(G)],
        "links": [{"source": u, "target": v, "type": k, **attrs} for u, v, k, attrs in _edges(G)],
    }


def _flat(attrs: dict[str, Any]) -> dict[str, str | int | float | bool]:
    out: dict[str, str | int | float | bool] = {}
    for key, value in attrs.items():
        if isinstance(value, str | bool | int | float):
            out[key] = value
        else:
            out[key] = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return out


def attrs_from_flat(flat: dict[str, Any], keys: Collection[str] | None = None) -> dict[str, Any]:
    """Undo :func:`_flat` for list/object values (strings that hold JSON arrays or objects).

    With ``keys``, only those attributes are decoded, so a text that merely looks like JSON
    (``"[draft] use Redis"``, ``"[1, 2]"``) stays text.

    Examples
    --------
    >>> attrs_from_flat({"tags": '["db"]', "text": "[1, 2]"}, keys={"tags"})
    {'tags': ['db'], 'text': '[1, 2]'}
    """
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if keys is not None and key not in keys:
            out[key] = value
            continue
        if isinstance(value, str) and value[:1] in "[{":
            try:
                out[key] = json.loads(value)
                continue
            except json.JSONDecodeError:
                pass
        out[key] = value
    return out


def to_graphml(G: nx.MultiDiGraph[str]) -> str:
    """GraphML (opens in Gephi and yEd); the edge type is the edge key and a ``type`` attribute."""
    H: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    for node_id, attrs in _nodes(G):
        H.add_node(node_id, **_flat(attrs))
    for u, v, k, attrs in _edges(G):
        H.add_edge(u, v, key=k, type=k, **_flat(attrs))
    buffer = io.BytesIO()
    nx.write_graphml(H, buffer, encoding="utf-8")
    # XML parsers turn a raw carriage return into a newline; a character reference survives.
    # Only values can hold one (the writer emits "\n" line breaks).
    return buffer.getvalue().decode("utf-8").replace("\r", "&#13;")


def _cypher_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _cypher_props(attrs: dict[str, Any]) -> str:
    return ", ".join(f"`{k}`: {_cypher_value(v)}" for k, v in sorted(attrs.items()))


def to_cypher(G: nx.MultiDiGraph[str]) -> str:
    """A Cypher script for Neo4j: ``MERGE`` every node by id, then every relationship.

    Node labels are ``Decision`` or ``Memory``; relationship types are the edge types in upper
    case (``DEPENDS_ON``). Running it twice creates nothing new.
    """
    nodes, edges = _nodes(G), _edges(G)
    lines = [f"// decigraph export: {len(nodes)} nodes, {len(edges)} relationships"]
    lines.append(
        "CREATE CONSTRAINT decigraph_id IF NOT EXISTS FOR (n:Node) REQUIRE n.id IS UNIQUE;"
    )
    for node_id, attrs in nodes:
        label = "Decision" if attrs.get("kind", "decision") == "decision" else "Memory"
        lines.append(
            f"MERGE (n:Node {{id: {_cypher_value(node_id)}}}) SET n:{label} "
            f"SET n += {{{_cypher_props(attrs)}}};"
        )
    for u, v, k, attrs in edges:
        lines.append(
            f"MATCH (a:Node {{id: {_cypher_value(u)}}}), (b:Node {{id: {_cypher_value(v)}}}) "
            f"MERGE (a)-[r:{k.upper()}]->(b) SET r += {{{_cypher_props(attrs)}}};"
        )
    return "\n".join(lines) + "\n"


def to_csv(G: nx.MultiDiGraph[str]) -> dict[str, str]:
    """Two tables: ``nodes.csv`` (id, attributes) and ``edges.csv`` (source, target, type, ...)."""
    nodes, edges = _nodes(G), _edges(G)
    node_columns = sorted({key for _, attrs in nodes for key in attrs})
    edge_columns = sorted({key for *_, attrs in edges for key in attrs})

    def table(header: list[str], rows: list[list[Any]]) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return buffer.getvalue()

    node_rows = [
        [node_id, *(_flat(attrs).get(c, "") for c in node_columns)] for node_id, attrs in nodes
    ]
    edge_rows = [
        [u, v, k, *(_flat(attrs).get(c, "") for c in edge_columns)] for u, v, k, attrs in edges
    ]
    return {
        "nodes.csv": table(["id", *node_columns], node_rows),
        "edges.csv": table(["source", "target", "type", *edge_columns], edge_rows),
    }


def export_graph(G: nx.MultiDiGraph[str], fmt: str) -> dict[str, str]:
    """``{file name: content}`` for ``fmt`` (one file, except CSV's two)."""
    if fmt in ("json", "d3"):
        return {f"graph.{fmt}.json": json.dumps(to_node_link(G), indent=1, sort_keys=True) + "\n"}
    if fmt == "graphml":
        return {"graph.graphml": to_graphml(G)}
    if fmt == "cypher":
        return {"graph.cypher": to_cypher(G)}
    if fmt == "csv":
        return to_csv(G)
    raise ValidationError("format", f"must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
