"""Reading exports back: node-link JSON (``json``/``d3``), GraphML and CSV into nodes and edges.

:func:`read_export` is the inverse of :func:`graph.export.export_graph`: it takes the same
``{file name: content}`` mapping (or the text of a single-file export) and returns every node and
edge, each validated by :class:`~graph.model.Node` / :class:`~graph.model.Edge`, so a value that
the store would refuse is refused here, naming the line (CSV), the position (JSON) or the node
(GraphML) and the field. Whether the items fit the target graph (ids free, endpoints present,
cycles) is checked by :func:`graph.restore.plan_import` before anything is written.

Cypher scripts are not read: they target Neo4j, and every fact they hold is in the other formats.

Examples
--------
>>> from graph.builders import build_graph
>>> from graph.export import export_graph
>>> G = build_graph(["aaaaaaaa", "bbbbbbbb"], [("aaaaaaaa", "bbbbbbbb", "relates_to")])
>>> doc = read_export("csv", export_graph(G, "csv"))
>>> [n.id for n in doc.nodes]
['aaaaaaaa', 'bbbbbbbb']
>>> [(e.source, e.target, e.type.value) for e in doc.edges]  # a symmetric edge, as stored
[('aaaaaaaa', 'bbbbbbbb', 'relates_to'), ('bbbbbbbb', 'aaaaaaaa', 'relates_to')]
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast
from xml.etree.ElementTree import ParseError

import networkx as nx
import pydantic

from .enums import EdgeType
from .errors import ValidationError
from .export import ESCAPED_KEY, attrs_from_flat
from .lifecycle import stored_attrs
from .model import Edge, Node

IMPORT_FORMATS = ("json", "d3", "graphml", "csv")
NODE_STRUCTURED = frozenset(
    {"reasons", "tags", "bridge", "entities", "past_reviews", "extras", "affected_kpis"}
)
"""Node attributes that flat formats (GraphML, CSV) hold as JSON text."""
EDGE_STRUCTURED = frozenset({"meta"})
"""Edge attributes that flat formats hold as JSON text."""

EDGE_TYPES = frozenset(t.value for t in EdgeType)

Row = tuple[str, dict[str, Any]]
"""Where an item was read (for error messages) and its raw fields."""


class GraphDocument(NamedTuple):
    """The nodes and edges of an export, in file order (symmetric edges appear as stored)."""

    nodes: list[Node]
    edges: list[Edge]


def read_export(fmt: str, source: str | Mapping[str, str]) -> GraphDocument:
    """Parse and validate an export made by :func:`graph.export.export_graph`.

    Parameters
    ----------
    fmt : {"json", "d3", "graphml", "csv"}
        The export format. ``cypher`` is refused: it targets Neo4j.
    source : str or mapping
        The file's text, or ``{file name: text}`` as ``export_graph`` returns it. CSV needs both
        ``nodes.csv`` and ``edges.csv``.

    Returns
    -------
    GraphDocument
        Validated nodes and edges, in file order.

    Raises
    ------
    ValidationError
        Malformed input; the message names the line, position or node and the field.
    """
    if fmt == "cypher":
        raise ValidationError(
            "format", "cypher exports target Neo4j and cannot be imported; use json, graphml or csv"
        )
    if fmt in ("json", "d3"):
        nodes, edges = _node_link_rows(_single(fmt, source))
    elif fmt == "graphml":
        nodes, edges = _graphml_rows(_single(fmt, source))
    elif fmt == "csv":
        if isinstance(source, str):
            raise ValidationError("csv", "needs both nodes.csv and edges.csv")
        nodes, edges = _csv_rows(source)
    else:
        allowed = ", ".join(IMPORT_FORMATS)
        raise ValidationError("format", f"must be one of {allowed}, got {fmt!r}")
    return GraphDocument(
        [_node(where, fields) for where, fields in nodes],
        [_edge(where, fields) for where, fields in edges],
    )


def read_export_files(fmt: str, paths: Sequence[Path]) -> dict[str, str]:
    """Load the files of an export: one file, or for CSV its directory or both tables.

    The result is what :func:`read_export` takes. Text is read as UTF-8 without newline
    translation, so line breaks inside values survive.
    """
    if fmt != "csv":
        if len(paths) != 1:
            raise ValidationError("path", f"{fmt} import reads exactly one file")
        return {paths[0].name: _read(paths[0])}
    if len(paths) == 1 and paths[0].is_dir():
        paths = [paths[0] / "nodes.csv", paths[0] / "edges.csv"]
    if len(paths) != 2:
        raise ValidationError("path", "csv import reads a directory, or nodes.csv and edges.csv")
    files: dict[str, str] = {}
    for path in paths:
        text = _read(path)
        header = text.split("\n", 1)[0].strip().lstrip("\ufeff")
        name = "edges.csv" if header.startswith("source,target,type") else "nodes.csv"
        if name in files:
            raise ValidationError("path", f"{path} and another file are both {name} tables")
        files[name] = text
    return files


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ValidationError("path", f"{path} does not exist") from None
    except IsADirectoryError:
        raise ValidationError("path", f"{path} is a directory") from None
    except UnicodeDecodeError as exc:
        raise ValidationError("path", f"{path} is not UTF-8 text ({exc.reason})") from None


def _single(fmt: str, source: str | Mapping[str, str]) -> str:
    if isinstance(source, str):
        return source
    if len(source) != 1:
        raise ValidationError("path", f"{fmt} import reads exactly one file")
    return next(iter(source.values()))


# -- formats -----------------------------------------------------------------------------------
def _node_link_rows(text: str) -> tuple[list[Row], list[Row]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError("json", f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        raise ValidationError("json", 'expected a node-link object with a "nodes" list')
    links_key = "links" if "links" in doc else "edges"
    links = doc.get(links_key, [])
    if not isinstance(links, list):
        raise ValidationError(links_key, "must be a list")
    nodes: list[Row] = []
    for index, item in enumerate(doc["nodes"]):
        if not isinstance(item, dict):
            raise ValidationError(f"nodes[{index}]", "must be an object")
        nodes.append((f"nodes[{index}]", dict(item)))
    edges: list[Row] = []
    for index, item in enumerate(links):
        if not isinstance(item, dict):
            raise ValidationError(f"{links_key}[{index}]", "must be an object")
        fields = dict(item)
        key = fields.pop("key", None)  # networkx's node_link_data names the multi-edge key
        fields.setdefault("type", key)
        edges.append((f"{links_key}[{index}]", fields))
    return nodes, edges


def _graphml_rows(text: str) -> tuple[list[Row], list[Row]]:
    try:
        graphml = io.BytesIO(text.encode("utf-8"))
        # A multigraph by force_multigraph (MultiGraph if the file says edgedefault="undirected").
        R = cast("nx.MultiDiGraph[str]", nx.read_graphml(graphml, force_multigraph=True))
    except ParseError as exc:
        line, column = exc.position
        raise ValidationError("graphml", f"line {line} column {column}: malformed XML") from None
    except (nx.NetworkXError, ValueError, KeyError, TypeError) as exc:
        raise ValidationError("graphml", f"not a GraphML graph: {exc}") from None
    nodes: list[Row] = []
    for node_id, d in R.nodes(data=True):
        where = f"node {node_id!r}"
        nodes.append((where, {"id": node_id, **_unflatten(where, d, NODE_STRUCTURED)}))
    edges: list[Row] = []
    for u, v, key, d in R.edges(keys=True, data=True):
        fields = _unflatten(f"edge {u!r} -> {v!r}", d, EDGE_STRUCTURED)
        fields.setdefault("type", key)
        edges.append(
            (f"edge {u!r} -> {v!r} ({fields['type']})", {"source": u, "target": v, **fields})
        )
    return nodes, edges


def _unflatten(where: str, flat: Mapping[str, Any], structured: Collection[str]) -> dict[str, Any]:
    """:func:`~graph.export.attrs_from_flat`, its errors naming the item."""
    try:
        return attrs_from_flat(dict(flat), structured)
    except ValueError as exc:
        raise ValidationError(f"{where}: {ESCAPED_KEY}", str(exc)) from None


def _csv_rows(files: Mapping[str, str]) -> tuple[list[Row], list[Row]]:
    for name in ("nodes.csv", "edges.csv"):
        if name not in files:
            raise ValidationError("csv", f"{name} is missing")
    nodes = list(_csv_table("nodes.csv", files["nodes.csv"], ("id",), NODE_STRUCTURED))
    edges = list(
        _csv_table("edges.csv", files["edges.csv"], ("source", "target", "type"), EDGE_STRUCTURED)
    )
    return nodes, edges


def _csv_table(
    name: str, text: str, leading: tuple[str, ...], structured: frozenset[str]
) -> Iterator[Row]:
    """Rows of one table; an empty cell is an absent value (CSV cannot tell ``""`` from none)."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    try:
        header = next(reader, [])
        if tuple(header[: len(leading)]) != leading:
            raise ValidationError(name, f"line 1: the header must start with {','.join(leading)}")
        start = reader.line_num + 1
        for row in reader:
            where = f"{name} line {start}"
            start = reader.line_num + 1
            if not row:
                continue
            if len(row) != len(header):
                raise ValidationError(where, f"has {len(row)} cells, the header {len(header)}")
            flat = {key: value for key, value in zip(header, row, strict=True) if value != ""}
            yield where, _decode(where, flat, structured)
    except csv.Error as exc:
        raise ValidationError(name, f"line {reader.line_num}: {exc}") from None


def _decode(where: str, flat: dict[str, Any], structured: frozenset[str]) -> dict[str, Any]:
    out = _unflatten(where, flat, ())  # escaped values (see graph.export.ESCAPED_KEY)
    for key in structured & out.keys():
        if isinstance(out[key], str):
            try:
                out[key] = json.loads(out[key])
            except json.JSONDecodeError as exc:
                raise ValidationError(f"{where}: {key}", f"is not JSON: {exc.msg}") from None
    return out


# -- validation --------------------------------------------------------------------------------
def _node(where: str, fields: dict[str, Any]) -> Node:
    if "id" in fields and not where.startswith("node "):  # GraphML rows are named by id already
        where = f"{where} (id {fields['id']!r})"
    try:  # an export reports the effective lifecycle; the store keeps the stored one
        return Node.model_validate(stored_attrs(fields))
    except pydantic.ValidationError as exc:
        raise _model_error(where, exc) from None


def _edge(where: str, fields: dict[str, Any]) -> Edge:
    raw_type = fields.get("type")
    if raw_type not in EDGE_TYPES:
        allowed = ", ".join(t.value for t in EdgeType)
        raise ValidationError(f"{where}: type", f"{raw_type!r} is not one of: {allowed}")
    try:
        return Edge.model_validate(fields)
    except pydantic.ValidationError as exc:
        raise _model_error(where, exc) from None


def _model_error(where: str, exc: pydantic.ValidationError) -> ValidationError:
    first = exc.errors(include_url=False)[0]
    field = ".".join(str(p) for p in first["loc"]) or "value"
    return ValidationError(f"{where}: {field}", first["msg"])
