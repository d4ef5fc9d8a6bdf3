"""Graph exports: D3 node-link JSON, GraphML, a Cypher script and CSV.

All exports are deterministic (nodes by id, edges by (source, target, type)) and carry every
stored attribute. A node's ``lifecycle`` is its effective one (``superseded`` when a node
supersedes it), as every answer reports it; a superseded node also carries ``stored_lifecycle``,
the value the store keeps, so an export reads back into the same graph
(:func:`graph.lifecycle.reported_attrs` and :func:`~graph.lifecycle.stored_attrs`).

Formats without nested values (GraphML, CSV, Cypher properties) hold lists and objects as JSON
text, which :func:`attrs_from_flat` turns back.

Every export parses whatever the text holds (new writes refuse C0 controls at the edge, but a
log written before may hold them; see :func:`graph.model.refused_character`):

* JSON escapes every non-ASCII and control character (``\\uXXXX``): it round-trips exactly.
* GraphML and CSV: a value holding a character XML 1.0 cannot carry at all, even as a character
  reference (C0 controls but tab, LF, CR; U+FFFE, U+FFFF; lone surrogates), is written as a JSON
  string literal with those characters ``\\u``-escaped, and the item's :data:`ESCAPED_KEY`
  attribute lists the attributes so written; :func:`attrs_from_flat` decodes them. Every other
  value is written as it is (the JSON text of lists and objects escapes those characters too).
* Cypher string literals escape quotes, backslashes and every control, separator or
  non-character code point (``\\uXXXX``, which Cypher reads back): no raw control character.

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
import re
from collections.abc import Collection, Mapping
from typing import Any

import networkx as nx

from .errors import ValidationError
from .lifecycle import SALIENCE, reported_attrs

EXPORT_FORMATS = ("json", "d3", "graphml", "cypher", "csv")
#: The attribute naming which of an item's flat values are escaped JSON string literals.
ESCAPED_KEY = "_escaped"
#: What XML 1.0 cannot carry even as a character reference (and CSV readers choke on).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: What a Cypher string literal escapes besides quotes and backslashes: controls (C0, DEL, C1),
#: line and paragraph separators, lone surrogates and the non-characters U+FFFE and U+FFFF.
_CYPHER_ESCAPED = re.compile(r"[\\'\"\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")
_CYPHER_SHORT = {"\\": "\\\\", "'": "\\'", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


Salience = Mapping[str, float] | None


def _nodes(G: nx.MultiDiGraph[str], salience: Salience = None) -> list[tuple[str, dict[str, Any]]]:
    """Nodes by id with their reported attributes, and ``salience`` (rounded to 6 places) when
    given: derived, like the effective lifecycle, and dropped again on import."""
    out = [(node_id, reported_attrs(G, node_id)) for node_id in sorted(G.nodes)]
    if salience is not None:
        for node_id, attrs in out:
            attrs[SALIENCE] = round(float(salience.get(node_id, 0.0)), 6)
    return out


def _edges(G: nx.MultiDiGraph[str]) -> list[tuple[str, str, str, dict[str, Any]]]:
    return sorted(
        ((u, v, str(k), dict(d)) for u, v, k, d in G.edges(keys=True, data=True)),
        key=lambda e: e[:3],
    )


def to_node_link(
    G: nx.MultiDiGraph[str], salience: Salience = None, as_of: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """D3's node-link shape: ``{"nodes": [{id, ...}], "links": [{source, target, type, ...}]}``.

    Symmetric edges are stored in both directions and exported as stored (both links).
    """
    doc = {
        "directed": True,
        "multigraph": True,
        "nodes": [{"id": node_id, **attrs} for node_id, attrs in _nodes(G, salience)],
        "links": [{"source": u, "target": v, "type": k, **attrs} for u, v, k, attrs in _edges(G)],
    }
    if as_of is not None:
        doc["graph"] = {"asOf": dict(as_of)}
    return doc


def _unicode_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _xml_safe_json(value: Any) -> str:
    """``value`` as JSON text holding no character XML cannot carry (escaped as ``\\uXXXX``)."""
    return _NOT_XML.sub(_unicode_escape, json.dumps(value, sort_keys=True, ensure_ascii=False))


def _flat(attrs: dict[str, Any]) -> dict[str, str | int | float | bool]:
    """Attributes as GraphML and CSV hold them: lists and objects as JSON text; a string that
    holds a character XML cannot carry as a JSON string literal, named in :data:`ESCAPED_KEY`."""
    out: dict[str, str | int | float | bool] = {}
    escaped: list[str] = []
    for key, value in attrs.items():
        if isinstance(value, str):
            if _NOT_XML.search(value):
                out[key] = _xml_safe_json(value)
                escaped.append(key)
            else:
                out[key] = value
        elif isinstance(value, bool | int | float):
            out[key] = value
        else:
            out[key] = _xml_safe_json(value)
    if escaped:
        out[ESCAPED_KEY] = ",".join(sorted(escaped))
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
    flat = dict(flat)
    escaped = flat.pop(ESCAPED_KEY, None)
    out: dict[str, Any] = {}
    if isinstance(escaped, str):
        for key in escaped.split(","):
            value = flat.pop(key, None)
            if isinstance(value, str):
                try:
                    out[key] = json.loads(value)
                except json.JSONDecodeError:
                    message = f"{key} is listed in {ESCAPED_KEY} but is not a JSON string"
                    raise ValueError(message) from None
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


def to_graphml(G: nx.MultiDiGraph[str], salience: Salience = None) -> str:
    """GraphML (opens in Gephi and yEd); the edge type is the edge key and a ``type`` attribute."""
    H: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    for node_id, attrs in _nodes(G, salience):
        H.add_node(node_id, **_flat(attrs))
    for u, v, k, attrs in _edges(G):
        H.add_edge(u, v, key=k, type=k, **_flat(attrs))
    buffer = io.BytesIO()
    nx.write_graphml(H, buffer, encoding="utf-8")
    # XML parsers turn a raw carriage return into a newline; a character reference survives.
    # Only values can hold one (the writer emits "\n" line breaks).
    return buffer.getvalue().decode("utf-8").replace("\r", "&#13;")


def _cypher_escape(match: re.Match[str]) -> str:
    char = match.group()
    return _CYPHER_SHORT.get(char) or f"\\u{ord(char):04x}"


def _cypher_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return "'" + _CYPHER_ESCAPED.sub(_cypher_escape, text) + "'"


def _cypher_props(attrs: dict[str, Any]) -> str:
    return ", ".join(f"`{k}`: {_cypher_value(v)}" for k, v in sorted(attrs.items()))


def to_cypher(G: nx.MultiDiGraph[str], salience: Salience = None) -> str:
    """A Cypher script for Neo4j: ``MERGE`` every node by id, then every relationship.

    Node labels are ``Decision`` or ``Memory``; relationship types are the edge types in upper
    case (``DEPENDS_ON``). Running it twice creates nothing new.
    """
    nodes, edges = _nodes(G, salience), _edges(G)
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


def to_csv(G: nx.MultiDiGraph[str], salience: Salience = None) -> dict[str, str]:
    """Two tables: ``nodes.csv`` (id, attributes) and ``edges.csv`` (source, target, type, ...)."""
    nodes = [(node_id, _flat(attrs)) for node_id, attrs in _nodes(G, salience)]
    edges = [(u, v, k, _flat(attrs)) for u, v, k, attrs in _edges(G)]
    node_columns = sorted({key for _, attrs in nodes for key in attrs})
    edge_columns = sorted({key for *_, attrs in edges for key in attrs})

    def table(header: list[str], rows: list[list[Any]]) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return buffer.getvalue()

    node_rows = [[node_id, *(attrs.get(c, "") for c in node_columns)] for node_id, attrs in nodes]
    edge_rows = [[u, v, k, *(attrs.get(c, "") for c in edge_columns)] for u, v, k, attrs in edges]
    return {
        "nodes.csv": table(["id", *node_columns], node_rows),
        "edges.csv": table(["source", "target", "type", *edge_columns], edge_rows),
    }


def export_graph(
    G: nx.MultiDiGraph[str],
    fmt: str,
    salience: Salience = None,
    as_of: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """``{file name: content}`` for ``fmt`` (one file, except CSV's two). With ``salience``,
    every node carries its score; ``as_of`` (the log position the graph stands at) is recorded
    in the JSON formats' ``graph`` object."""
    if fmt in ("json", "d3"):
        doc = to_node_link(G, salience, as_of)
        return {f"graph.{fmt}.json": json.dumps(doc, indent=1, sort_keys=True) + "\n"}
    if fmt == "graphml":
        return {"graph.graphml": to_graphml(G, salience)}
    if fmt == "cypher":
        return {"graph.cypher": to_cypher(G, salience)}
    if fmt == "csv":
        return to_csv(G, salience)
    raise ValidationError("format", f"must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
