"""Text with unusual characters: the edge refuses C0 controls (naming the field), and every
export parses back whatever a store holds (an old log may hold controls the edge now refuses).

Character classes: C0 controls, tab/LF/CR, DEL, C1 (NEL included), the non-characters U+FFFE
and U+FFFF, lone surrogates (only in a graph built in memory: no log can hold them), emoji and
ZWJ sequences, right-to-left text and bidi controls, combining marks, line/paragraph separators,
a BOM, the last plane, and text that looks like the escapes themselves.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from graph.builders import build_graph
from graph.drafts import DecisionDraft, MemoryDraft
from graph.enums import ReasonType
from graph.export import ESCAPED_KEY, attrs_from_flat, export_graph
from graph.importer import read_export
from graph.model import Reason
from graph.store import DecisionStore
from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from tests.conftest import StoreFactory
from tests.support.fakes import fake_app

CLASSES: dict[str, str] = {
    "c0": "nul\x00 bel\x07 esc\x1b vt\x0b ff\x0c us\x1f",
    "whitespace": "tab\there\nline\r\nwindows\rmac",
    "del": "del\x7fend",
    "c1": "c1\x80\x85nel\x9f",
    "nonchar": "nonchar\ufffe\uffff",
    "emoji": "ship it 🚀 👩‍💻 🇩🇪",
    "rtl": "עברית العربية \u200f\u202eevil\u202c",
    "combining": "e\u0301 Z\u0324\u0354\u0367 n\u0303",
    "separators": "line\u2028para\u2029end",
    "bom": "\ufeffbom",
    "astral": "plane16 \U0010fffd",
    "lookalike": 'literal \\u0000 and "quoted" and it\'s \\',
}
STORABLE = CLASSES  # everything a log can hold (lone surrogates aside)
SURROGATE = "lone \ud800 surrogate \udfff"


def _draft(name: str, text: str) -> DecisionDraft:
    """A decision holding ``text`` everywhere text goes, as an old log may hold it (built
    without the edge's validation, which now refuses C0 controls)."""
    return DecisionDraft.model_construct(
        text=f"{name}: {text}",
        context=f"context {text}",
        tags=[f"tag {text} end", "plain"],  # stored tags and entities are stripped
        entities=[f"entity {text} end"],
        reasons=[Reason(type=ReasonType.ANALYSIS, text="ok").model_copy(update={"text": text})],
        project=f"project {text}",
        pattern=f"pattern {text}",
    )


@pytest.fixture
def store(open_store: StoreFactory, tmp_path: Path) -> DecisionStore:
    source = open_store(tmp_path / "source")
    ids = [source.record(_draft(name, text), "t").id for name, text in STORABLE.items()]
    memory = MemoryDraft.model_construct(text=f"memory {CLASSES['c0']}", source="ops\x07")
    ids.append(source.remember(memory, "t").id)
    for left, right, text in zip(ids, ids[1:], STORABLE.values(), strict=False):
        source.link(left, right, "depends_on", "t", context=f"edge {text}")
    return source


def _texts(G: nx.MultiDiGraph[str]) -> set[str]:
    return {str(a["text"]) for _, a in G.nodes(data=True)}


CYPHER_STRING = re.compile(r"'((?:[^'\\]|\\.)*)'", re.DOTALL)
CYPHER_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def cypher_strings(script: str) -> Iterator[str]:
    """The string literals of a Cypher script, decoded as Neo4j reads them."""

    def unescape(match: re.Match[str]) -> str:
        code = match.group(1)
        if code.startswith("u"):
            return chr(int(code[1:], 16))
        return CYPHER_ESCAPES.get(code, code)

    for match in CYPHER_STRING.finditer(script):
        yield re.sub(r"\\(u[0-9a-fA-F]{4}|.)", unescape, match.group(1), flags=re.DOTALL)


def raw_controls(text: str) -> set[str]:
    """Control, surrogate, separator and non-character code points in ``text`` (LF aside)."""
    return {
        c
        for c in text
        if c != "\n"
        and (unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") or c in "\ufffe\uffff")
    }


# -- every export of a store parses back -----------------------------------------------------
@pytest.mark.parametrize("fmt", ["json", "graphml", "csv"])
def test_every_character_class_round_trips_through_an_export(
    store: DecisionStore, open_store: StoreFactory, tmp_path: Path, fmt: str
) -> None:
    files = export_graph(store.graph, fmt)
    for name, content in files.items():
        content.encode("utf-8")  # writable as a UTF-8 file
        if fmt == "graphml":
            ET.fromstring(content.encode("utf-8"))  # a strict XML 1.0 parser accepts it
        elif fmt == "csv":
            list(csv.reader(io.StringIO(content, newline="")))
        else:
            json.loads(content)
        assert not {"\x00", "\x07", "\x1b", "\ufffe", "\uffff"} & set(content), name
    nodes, edges = read_export(fmt, files)
    target = open_store(tmp_path / f"target-{fmt}")
    target.import_graph(nodes, edges, "restorer")
    assert target.graph_hash() == store.graph_hash()
    assert all(f"{name}: {text}" in _texts(target.graph) for name, text in STORABLE.items())
    target.close()
    replayed = open_store(tmp_path / f"target-{fmt}", use_snapshot=False)  # the log replays
    assert replayed.graph_hash() == store.graph_hash()


def test_the_cypher_script_holds_no_raw_control_character(store: DecisionStore) -> None:
    script = export_graph(store.graph, "cypher")["graph.cypher"]
    assert raw_controls(script) == set()
    literals = set(cypher_strings(script))
    for name, text in STORABLE.items():
        assert f"{name}: {text}" in literals  # each statement decodes back to itself
        assert f"context {text}" in literals
        assert f"edge {text}" in literals
    assert all(line.endswith(";") for line in script.splitlines()[1:])


def test_only_values_that_need_it_are_escaped(store: DecisionStore) -> None:
    graphml = export_graph(store.graph, "graphml")["graph.graphml"]
    assert "ship it 🚀 👩‍💻 🇩🇪" in graphml  # written as it is
    assert "עברית العربية" in graphml
    nodes = export_graph(store.graph, "csv")["nodes.csv"]
    rows = list(csv.DictReader(io.StringIO(nodes, newline="")))
    row = next(r for r in rows if r["text"].startswith('"c0: '))
    assert "text" in row[ESCAPED_KEY].split(",")
    assert json.loads(row["text"]).startswith("c0: nul\x00")


def test_lone_surrogates_in_a_graph_built_in_memory_still_export() -> None:
    G = build_graph(["aaaaaaaa", "bbbbbbbb"])  # no model accepts them: set behind its back
    G.nodes["aaaaaaaa"].update(text=SURROGATE, tags=[SURROGATE])
    G.add_edge("aaaaaaaa", "bbbbbbbb", key="relates_to", context=SURROGATE)
    for fmt in ("json", "graphml", "csv", "cypher"):
        for content in export_graph(G, fmt).values():
            content.encode("utf-8")
            assert not {c for c in content if unicodedata.category(c) == "Cs"}, fmt
    doc = json.loads(export_graph(G, "json")["graph.json.json"])
    assert doc["nodes"][0]["text"] == SURROGATE
    graphml = export_graph(G, "graphml")["graph.graphml"]
    ET.fromstring(graphml.encode("utf-8"))
    R = nx.read_graphml(io.BytesIO(graphml.encode("utf-8")), force_multigraph=True)
    attrs = attrs_from_flat(dict(R.nodes["aaaaaaaa"]), {"tags"})
    assert (attrs["text"], attrs["tags"]) == (SURROGATE, [SURROGATE])
    script = export_graph(G, "cypher")["graph.cypher"]
    assert SURROGATE in set(cypher_strings(script))


# -- the edge refuses C0 controls, naming the field ------------------------------------------
@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def call(app: Decigraph, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer: dict[str, Any] = Dispatcher(build_registry(app)).handle(request, CallContext("a"))
    return answer


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("recordDecision", {"decision": "Use Redis\x00"}, "decision"),
        ("recordDecision", {"decision": "Use Redis", "context": "ring \x07"}, "context"),
        ("recordDecision", {"decision": "Use Redis", "tags": ["ok", "e\x1b"]}, "tags.1"),
        ("recordDecision", {"decision": "Use Redis", "entities": ["\x01"]}, "entities.0"),
        (
            "recordDecision",
            {"decision": "Use Redis", "reasons": [{"type": "analysis", "text": "x\x00"}]},
            "reasons.0.text",
        ),
        ("recordDecision", {"decision": "Use Redis", "project": "p\x0bq"}, "project"),
        ("recordDecision", {"decision": "Use Redis", "externalId": "x\x00"}, "externalId"),
        ("remember", {"text": "heard\x00"}, "text"),
        ("remember", {"text": "heard", "source": "ops\x07"}, "source"),
        ("remember", {"text": "heard", "tags": ["\x02"]}, "tags.0"),
        ("checkGuardrails", {"action": {"description": "Use Redis\x00"}}, "action.description"),
    ],
)
def test_control_characters_are_refused_at_the_edge_naming_the_field(
    app: Decigraph, method: str, params: dict[str, Any], field: str
) -> None:
    before = app.store.seq
    error = call(app, method, params)["error"]
    assert error["code"] == -32602
    assert error["data"]["field"] == field
    assert "control character" in error["message"]
    assert app.store.seq == before


def test_updates_links_and_reviews_refuse_them_too(app: Decigraph) -> None:
    made = call(app, "recordDecision", {"decision": "Use Redis for sessions"})["result"]
    other = call(app, "recordDecision", {"decision": "Cache pages in Redis"})["result"]
    before = app.store.seq
    for method, params, field in [
        ("updateDecision", {"id": made["id"], "updates": {"context": "\x00"}}, "updates.context"),
        ("reviewDecision", {"id": made["id"], "outcome": "success", "lessons": "\x07"}, "lessons"),
        (
            "linkDecisions",
            {
                "sourceId": made["id"],
                "targetId": other["id"],
                "edgeType": "relates_to",
                "context": "\x1f",
            },
            "context",
        ),
    ]:
        error = call(app, method, params)["error"]
        assert (error["code"], error["data"]["field"]) == (-32602, field), method
    assert app.store.seq == before


@pytest.mark.parametrize("name", [n for n in CLASSES if n != "c0"])
def test_every_other_character_class_is_stored_as_sent(app: Decigraph, name: str) -> None:
    text = f"Use Redis: {CLASSES[name]}"
    answer = call(app, "recordDecision", {"decision": text, "tags": [CLASSES[name]]})
    assert "result" in answer, answer
    node = app.store.get(answer["result"]["id"])
    assert node.text == text.strip()
    remembered = call(app, "remember", {"text": f"heard {CLASSES[name]}"})
    assert "result" in remembered, remembered
