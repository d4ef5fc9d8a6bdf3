"""JSON-RPC over a real socket: the real server process, real ChromaDB, real model."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graph.store import DecisionStore, StoreOptions
from tests.e2e.test_serve import start_serve, stop_serve

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "agent-a-token-0123456789"
OTHER = "agent-b-token-0123456789"


RULES = """
- id: critical-needs-reasons
  description: Critical decisions need a reason
  conditions: [{field: stakes, op: eq, value: critical}]
  requirements: [{field: reasons, op: min_count, value: 1}]
  action: block
  message: "{stakes}-stakes decisions need at least one reason"
- id: say-how-sure
  description: State a confidence
  requirements: [{field: confidence, op: exists}]
  action: warn
"""


class Server:
    def __init__(self, url: str, data: Path) -> None:
        self.url = url
        self.data = data
        self.client = httpx.Client(timeout=60)

    def call(self, method: str, params: dict[str, Any] | None = None, token: str = TOKEN) -> Any:
        body = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": 1}
        response = self.client.post(
            f"{self.url}/cstp", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 200, response.text
        return response.json()

    def ok(self, method: str, params: dict[str, Any] | None = None, token: str = TOKEN) -> Any:
        answer = self.call(method, params, token)
        assert "error" not in answer, answer
        return answer["result"]

    def raw(self, body: bytes, token: str | None = TOKEN) -> httpx.Response:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return self.client.post(f"{self.url}/cstp", content=body, headers=headers)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("rpc") / "data"
    (data / "guardrails").mkdir(parents=True)
    (data / "guardrails" / "rules.yaml").write_text(RULES)
    env = {**os.environ, "CSTP_AUTH_TOKENS": f"agent-a:{TOKEN},agent-b:{OTHER}"}
    env["DECIGRAPH_FSYNC"] = "never"
    proc, url = start_serve(data, env)
    try:
        yield Server(url, data)
    finally:
        stop_serve(proc)


def test_record_get_query_update_review(server: Server) -> None:
    made = server.ok(
        "cstp.recordDecision",
        {
            "decision": "Use PostgreSQL for the billing ledger",
            "confidence": 0.85,
            "category": "architecture",
            "stakes": "high",
            "reasons": [{"type": "analysis", "text": "ACID and mature tooling"}],
            "tags": ["db"],
            "reviewIn": "2w",
        },
    )
    assert made["success"] is True
    assert len(made["id"]) == 8
    assert made["quality"]["score"] < 1
    found = server.ok("cstp.getDecision", {"id": made["id"]})
    assert found["found"] is True
    assert found["decision"]["decision"] == "Use PostgreSQL for the billing ledger"
    assert found["decision"]["recordedBy"] == "agent-a"
    query = {"query": "which database for the ledger", "retrievalMode": "hybrid"}
    hits = server.ok("cstp.queryDecisions", query)
    assert hits["decisions"][0]["id"] == made["id"]
    assert hits["agent"] == "agent-a"
    assert 0 < hits["decisions"][0]["score"] < 1  # an absolute relevance, not 1.0 for the best
    assert "scores" not in hits  # scoring internals only when asked
    explained = server.ok("cstp.queryDecisions", {**query, "explain": True})
    assert set(explained["scores"][made["id"]]) == {"semantic", "keyword", "combined"}
    updated = server.ok("cstp.updateDecision", {"id": made["id"], "updates": {"confidence": 0.9}})
    assert updated["updated_fields"] == ["confidence"]
    reviewed = server.ok(
        "cstp.reviewDecision", {"decision_id": made["id"], "outcome": "success"}, token=OTHER
    )
    assert reviewed["status"] == "reviewed"
    assert server.ok("cstp.getDecision", {"id": made["id"]})["decision"]["reviewedBy"] == "agent-b"
    assert server.ok("cstp.getDecision", {"id": "0000beef"}) == {"found": False, "id": "0000beef"}


def test_link_unlink_remember_recall(server: Server) -> None:
    a = server.ok("cstp.recordDecision", {"decision": "Adopt Kafka for the event pipeline"})["id"]
    b = server.ok("cstp.recordDecision", {"decision": "Run Kafka on Kubernetes"})["id"]
    linked = server.ok(
        "cstp.linkDecisions", {"sourceId": b, "targetId": a, "edgeType": "depends_on"}
    )
    assert linked["edge"]["createdBy"] == "agent-a"
    assert server.ok("cstp.unlinkDecisions", {"sourceId": b, "targetId": a})["success"] is True
    first = server.ok(
        "cstp.remember", {"text": "The nightly export failed", "source": "ops", "externalId": "m1"}
    )
    second = server.ok(
        "cstp.remember",
        {"text": "We moved the export to 2am because the nightly export failed", "source": "ops"},
    )
    assert second["edgesCreated"] >= 1
    again = server.ok("cstp.remember", {"text": "different", "externalId": "m1"})
    assert again["id"] == first["id"]
    assert again["created"] is False
    answer = server.ok(
        "cstp.recall", {"query": "why did we move the export?", "limit": 5, "explain": True}
    )
    assert answer["intent"] == "why"
    assert answer["preset"] == "why-causal"
    ids = [r["id"] for r in answer["results"]]
    assert second["id"] in ids
    assert "signals" in answer["results"][0]["via"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "decision"),
        ({"decision": "x", "confidence": 2}, "confidence"),
        ({"decision": "x", "category": "vibes"}, "category"),
        ({"decision": "x", "recordedBy": "someone-else"}, "recordedBy"),
        ({"decision": "x", "project_context": {"pr": [1]}}, "project_context.pr"),
        ({"decision": "x", "reasons": [{"type": "hunch", "text": "t"}]}, "reasons.0.type"),
    ],
)
def test_invalid_params_name_the_field(server: Server, params: dict[str, Any], field: str) -> None:
    answer = server.call("cstp.recordDecision", params)
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"]["field"] == field


def test_unknown_params_are_ignored_and_reported(server: Server) -> None:
    made = server.ok(
        "cstp.recordDecision", {"decision": "Use Caddy as the edge proxy", "colour": "red"}
    )
    assert made["warnings"] == ["colour: not a known parameter; ignored"]


def test_protocol_errors(server: Server) -> None:
    unknown = server.call("cstp.noSuchThing")
    assert unknown["error"]["code"] == -32601
    assert "cstp.recall" in unknown["error"]["data"]["available"]
    assert server.raw(b"{not json").json()["error"]["code"] == -32700
    assert server.raw(b'{"jsonrpc": "2.0", "method": 1, "id": 1}').json()["error"]["code"] == -32600
    assert (
        server.raw(
            b'{"jsonrpc":"2.0","method":"cstp.recall","params":{"query":"x","limit":NaN},"id":1}'
        ).json()["error"]["code"]
        == -32700
    )
    missing = server.call(
        "cstp.linkDecisions", {"sourceId": "0000aaaa", "targetId": "0000bbbb", "edgeType": "blocks"}
    )
    assert missing["error"]["code"] == -32005
    notification = server.raw(
        b'{"jsonrpc":"2.0","method":"cstp.getDecision","params":{"id":"0000aaaa"}}'
    )
    assert notification.status_code == 204
    big = server.raw(
        b'{"jsonrpc":"2.0","method":"cstp.recall","params":{"query":"'
        + b"x" * 1_100_000
        + b'"},"id":1}'
    )
    assert big.status_code == 413


def test_batches(server: Server) -> None:
    body = (
        b'[{"jsonrpc":"2.0","method":"cstp.getDecision","params":{"id":"0000aaaa"},"id":1},'
        b'{"jsonrpc":"2.0","method":"cstp.nope","id":2},'
        b'{"jsonrpc":"2.0","method":"cstp.recall","params":{"query":"kafka"},"id":3}]'
    )
    answers = server.raw(body).json()
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[1]["error"]["code"] == -32601
    assert "results" in answers[2]["result"]
    assert server.raw(b"[]").json()["error"]["code"] == -32600


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789"])
def test_auth_is_required_except_for_health_and_the_card(server: Server, token: str | None) -> None:
    refused = server.raw(
        b'{"jsonrpc":"2.0","method":"cstp.recall","params":{"query":"x"},"id":1}', token
    )
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == "Bearer"
    assert httpx.get(f"{server.url}/health").status_code == 200
    card = httpx.get(f"{server.url}/.well-known/agent.json").json()
    assert "cstp.recordDecision" in card["capabilities"]["cstp"]["methods"]


def test_graph_methods(server: Server) -> None:
    def record(text: str, **extra: Any) -> str:
        return str(server.ok("cstp.recordDecision", {"decision": text, **extra})["id"])

    base = record(
        "Choose Postgres as the primary datastore",
        stakes="critical",
        reasons=[{"type": "analysis", "text": "the team knows it"}],
    )
    orm = record("Use SQLAlchemy on top of the datastore")
    cache = record("Cache reads in Memcached")
    rival = record("Choose MySQL as the primary datastore")
    server.ok("cstp.linkDecisions", {"sourceId": orm, "targetId": base, "edgeType": "depends_on"})
    server.ok("cstp.linkDecisions", {"sourceId": cache, "targetId": orm, "edgeType": "depends_on"})
    server.ok(
        "cstp.linkDecisions", {"sourceId": rival, "targetId": base, "edgeType": "contradicts"}
    )

    graph = server.ok("cstp.getGraph", {"nodeId": orm, "depth": 1})
    assert graph["centerId"] == orm
    assert {n["id"] for n in graph["nodes"]} >= {orm, base, cache}
    neighbors = server.ok("cstp.getNeighbors", {"nodeId": base, "direction": "incoming"})
    assert orm in {n["node"]["id"] for n in neighbors["neighbors"]}
    path = server.ok(
        "cstp.findPath", {"sourceId": cache, "targetId": base, "edgeTypes": ["depends_on"]}
    )
    assert path["path"] == [cache, orm, base]
    assert path["length"] == 2
    assert [n["id"] for n in server.ok("cstp.getAncestors", {"nodeId": cache})["nodes"]] == [
        orm,
        base,
    ]
    assert cache in [n["id"] for n in server.ok("cstp.getDescendants", {"nodeId": base})["nodes"]]
    found = server.ok("cstp.findContradictions", {})["contradictions"]
    assert {(c["a"], c["b"]) for c in found} >= {tuple(sorted((base, rival)))}
    # Linked by someone, not raised by the judge: confirmed.
    (linked,) = [c for c in found if {c["a"], c["b"]} == {base, rival}]
    assert linked["status"] == "confirmed"
    # Building on accepted decisions that are not reviewed yet is not blocked...
    assert server.ok("cstp.getBlockedChain", {"nodeId": cache})["blocked"] is False
    # ...building on one that failed is; what builds on the blocked orm is not listed again.
    server.ok("cstp.reviewDecision", {"id": base, "outcome": "failure"})
    chain = server.ok("cstp.getBlockedChain", {"nodeId": orm})
    assert chain["blocked"] is True
    assert [(b["nodeId"], b["reason"]) for b in chain["chain"]] == [(base, "failed")]
    assert server.ok("cstp.getBlockedChain", {"nodeId": cache})["blocked"] is False
    assert server.ok("cstp.computeSalience", {})["computed"] >= 4
    top = server.ok("cstp.getHighSalience", {"limit": 3})["decisions"]
    assert top[0]["id"] == base
    gone = server.call("cstp.getGraph", {"nodeId": "0000dead"})
    assert gone["error"]["code"] == -32005
    assert gone["error"]["data"]["field"] == "nodeId"


def test_list_and_stats(server: Server) -> None:
    for i in range(3):
        server.ok(
            "cstp.recordDecision",
            {"decision": f"Listing sample {i}", "project": "lister", "tags": ["list"]},
        )
    page = server.ok(
        "cstp.listDecisions", {"project": "lister", "limit": 2, "sort": "date", "order": "asc"}
    )
    assert page["total"] == 3
    assert [d["decision"] for d in page["decisions"]] == ["Listing sample 0", "Listing sample 1"]
    rest = server.ok("cstp.listDecisions", {"project": "lister", "limit": 2, "offset": 2})
    assert len(rest["decisions"]) == 1
    assert server.ok("cstp.listDecisions", {"search": "SAMPLE 2"})["total"] == 1
    stats = server.ok("cstp.getStats", {"project": "lister"})
    assert stats["total"] == 3
    assert stats["byAgent"] == {"agent-a": 3}
    assert stats["topTags"] == [{"tag": "list", "count": 3}]
    bad = server.call("cstp.listDecisions", {"status": "done"})
    assert bad["error"]["data"]["field"] == "status"
    bad_review_in = server.call("cstp.recordDecision", {"decision": "x", "reviewIn": "soon"})
    assert bad_review_in["error"]["code"] == -32602


def test_guardrails_gate_recording(server: Server, tmp_path: Path) -> None:
    listed = server.ok("cstp.listGuardrails")
    assert {g["id"] for g in listed["guardrails"]} == {
        "critical-needs-reasons",
        "say-how-sure",
        "graph-contradiction",
    }
    risky = {"description": "Drop the audit log table", "stakes": "critical"}
    verdict = server.ok("cstp.checkGuardrails", {"action": risky})
    assert verdict["allowed"] is False
    assert verdict["violations"][0]["guardrailId"] == "critical-needs-reasons"
    assert (
        verdict["violations"][0]["message"] == "critical-stakes decisions need at least one reason"
    )
    assert [w["guardrailId"] for w in verdict["warnings"]] == ["say-how-sure"]
    before = server.ok("cstp.getStats")["total"]
    refused = server.call(
        "cstp.recordDecision", {"decision": "Drop the audit log table", "stakes": "critical"}
    )
    assert refused["error"]["code"] == -32004
    assert refused["error"]["data"]["violations"][0]["guardrailId"] == "critical-needs-reasons"
    assert server.ok("cstp.getStats")["total"] == before  # nothing was written
    forced = server.ok(
        "cstp.recordDecision",
        {
            "decision": "Drop the audit log table",
            "stakes": "critical",
            "override": {"reason": "approved in INC-42"},
        },
    )
    assert forced["guardrail_override"] is True
    log = (server.data / "events.jsonl").read_text()
    assert '"guardrailOverride"' in log
    assert "approved in INC-42" in log
    assert server.ok("cstp.getStats")["total"] == before + 1
    ok = server.ok(
        "cstp.preAction",
        {
            "action": {"description": "Rotate the API keys", "confidence": 0.8},
            "options": {"autoRecord": True},
        },
    )
    assert ok["allowed"] is True
    assert len(ok["decisionId"]) == 8


def test_metrics_count_calls_per_method(server: Server) -> None:
    server.ok("cstp.getStats")
    server.call("cstp.noSuchThing")
    refused = httpx.get(f"{server.url}/metrics")
    assert refused.status_code == 401
    text = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    assert 'decigraph_rpc_requests_total{method="cstp.getStats",outcome="ok"}' in text
    assert 'decigraph_rpc_requests_total{method="unknown",outcome="-32601"}' in text
    assert 'decigraph_rpc_duration_seconds_bucket{method="cstp.getStats",le="+Inf"}' in text


def test_ready_and_session_context(server: Server) -> None:
    shaky = server.ok(
        "cstp.recordDecision",
        {
            "decision": "Migrate billing to the new ledger service",
            "stakes": "high",
            "confidence": 0.3,
        },
    )["id"]
    queue = server.ok("cstp.ready", {"limit": 50, "actionTypes": ["low_confidence"]})["actions"]
    assert shaky in [a["decisionId"] for a in queue]
    assert {a["type"] for a in queue} == {"low_confidence"}
    everything = server.ok("cstp.ready", {"limit": 100})["actions"]
    assert {a["type"] for a in everything} >= {"low_confidence", "resolve_contradiction", "unblock"}
    pack = server.ok("cstp.getSessionContext", {"taskDescription": "move billing to a new ledger"})
    assert pack["context"]["relevant"][0]["id"] == shaky
    assert {"relevant", "contradictions", "salient", "blocked", "guardrails"} <= set(
        pack["context"]
    )
    text = server.ok(
        "cstp.getSessionContext",
        {"taskDescription": "move billing to a new ledger", "format": "markdown", "maxChars": 300},
    )
    assert text["markdown"].startswith("# Context for: move billing")
    assert len(text["markdown"]) <= 300
    assert text["truncated"] is True


def test_a_restart_loses_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "CSTP_AUTH_TOKENS": f"agent-a:{TOKEN}", "DECIGRAPH_FSYNC": "always"}

    def start() -> tuple[subprocess.Popen[bytes], Server]:
        proc, url = start_serve(data, env)
        return proc, Server(url, data)

    proc, server = start()
    ids = [
        server.ok("cstp.recordDecision", {"decision": f"Restart-proof decision {i}"})["id"]
        for i in range(3)
    ]
    server.ok(
        "cstp.linkDecisions", {"sourceId": ids[1], "targetId": ids[0], "edgeType": "depends_on"}
    )
    memory = server.ok("cstp.remember", {"text": "The restart drill ran at noon"})["id"]
    proc.kill()  # no clean shutdown: acknowledged writes must survive anyway
    proc.wait(timeout=30)
    proc, server = start()
    try:
        for node_id in ids:
            assert server.ok("cstp.getDecision", {"id": node_id})["found"] is True
        assert server.ok("cstp.getAncestors", {"nodeId": ids[1]})["nodes"][0]["id"] == ids[0]
        hits = server.ok("cstp.recall", {"query": "when did the restart drill run?"})["results"]
        assert hits[0]["id"] == memory
    finally:
        stop_serve(proc)
    verified = subprocess.run(
        [
            sys.executable,
            "-m",
            "service.cli",
            "verify",
            "--data-dir",
            str(data),
            "--indexes",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_graph_export_route(server: Server) -> None:
    server.ok("cstp.recordDecision", {"decision": "Exported over HTTP"})
    assert httpx.get(f"{server.url}/graph/export").status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    d3 = httpx.get(f"{server.url}/graph/export", params={"format": "d3"}, headers=auth)
    assert d3.status_code == 200
    assert d3.json()["nodes"]
    graphml = httpx.get(f"{server.url}/graph/export", params={"format": "graphml"}, headers=auth)
    assert graphml.text.startswith("<?xml")
    assert (
        httpx.get(f"{server.url}/graph/export", params={"format": "xlsx"}, headers=auth).status_code
        == 400
    )
    bad_table = {"format": "json", "table": "nodes"}
    assert (
        httpx.get(f"{server.url}/graph/export", params=bad_table, headers=auth).status_code == 400
    )


def test_http_exports_import_back_into_the_same_graph(server: Server, tmp_path: Path) -> None:
    """Every importable format, downloaded over HTTP, imports into an empty store unchanged."""
    from graph.importer import read_export
    from graph.state import graph_hash
    from service.analyst import graph_from_node_link

    first = server.ok("cstp.recordDecision", {"decision": "Round-trip me over HTTP"})["id"]
    second = server.ok("cstp.recordDecision", {"decision": "And depend on the first"})["id"]
    server.ok(
        "cstp.linkDecisions", {"sourceId": second, "targetId": first, "edgeType": "depends_on"}
    )
    auth = {"Authorization": f"Bearer {TOKEN}"}

    def download(**params: str) -> httpx.Response:
        answer = httpx.get(f"{server.url}/graph/export", params=params, headers=auth, timeout=60)
        assert answer.status_code == 200, answer.text
        return answer

    served = graph_hash(graph_from_node_link(download(format="json").json()))
    with zipfile.ZipFile(io.BytesIO(download(format="csv").content)) as archive:
        tables = {name: archive.read(name).decode() for name in archive.namelist()}
    assert sorted(tables) == ["edges.csv", "nodes.csv"]
    assert download(format="csv", table="nodes").text == tables["nodes.csv"]
    sources = {
        "json": download(format="json").text,
        "d3": download(format="d3").text,
        "graphml": download(format="graphml").text,
        "csv": tables,
    }
    for number, (fmt, source) in enumerate(sources.items()):
        document = read_export(fmt, source)
        with DecisionStore.open(tmp_path / f"into-{number}", StoreOptions(fsync="never")) as store:
            store.import_graph(document.nodes, document.edges, "http-import")
            assert store.graph_hash() == served, fmt
            assert store.verify().ok


def test_cstp_cli_contract(server: Server) -> None:
    """The request shapes CSTP's CLI sends, and the response fields it reads, verbatim."""
    recorded = server.ok(
        "cstp.recordDecision",
        {
            "decision": "Adopt OpenTelemetry for tracing",
            "confidence": 0.8,
            "category": "tooling",
            "stakes": "medium",
            "context": "We need cross-service traces",
            "reasons": [{"type": "analysis", "text": "vendor neutral", "strength": 0.9}],
            "tags": ["observability"],
            "reviewIn": "30d",
        },
    )
    assert {"success", "id", "indexed", "timestamp", "quality"} <= set(recorded)
    query = server.ok(
        "cstp.queryDecisions",
        {
            "query": "tracing",
            "limit": 5,
            "retrievalMode": "hybrid",
            "hybridWeight": 0.7,
            "filters": {"category": "tooling"},
        },
    )
    assert {"decisions", "total", "query", "queryTimeMs", "agent", "retrievalMode"} <= set(query)
    row = query["decisions"][0]
    assert {"id", "title", "category", "confidence", "stakes", "status", "date", "distance"} <= set(
        row
    )
    check = server.ok(
        "cstp.checkGuardrails",
        {
            "action": {
                "description": "Adopt OpenTelemetry",
                "category": "tooling",
                "stakes": "medium",
                "confidence": 0.8,
                "context": {},
            }
        },
    )
    assert {"allowed", "violations", "warnings", "evaluated", "evaluatedAt"} <= set(check)
    got = server.ok("cstp.getDecision", {"id": recorded["id"]})
    assert got["found"] is True
    reviewed = server.ok(
        "cstp.reviewDecision",
        {
            "decision_id": recorded["id"],
            "outcome": "partial",
            "actualResult": "half the services",
            "lessons": "start with the gateway",
        },
    )
    assert {"success", "id", "status", "reviewedAt"} <= set(reviewed)
    rules = server.ok("cstp.listGuardrails", {})
    assert {"guardrails", "count"} <= set(rules)
    assert {"id", "description", "action", "scope", "conditions", "requirements"} <= set(
        rules["guardrails"][0]
    )
