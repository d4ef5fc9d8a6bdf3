"""State reported truthfully over the real server (issue 12, points 5-7): supersession in every
answer, filter and export; reviews as history; no-op updates that write nothing; recall paths
that show each edge as stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from graph.store import DecisionStore, StoreOptions
from tests.e2e.test_rpc_e2e import ROOT, TOKEN, Server
from tests.e2e.test_serve import start_serve, stop_serve

OTHER = "agent-b-token-0123456789"
EXPORT = [sys.executable, "-m", "service.cli", "export", "--format", "json"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("state") / "data"
    env = {**os.environ, "CSTP_AUTH_TOKENS": f"agent-a:{TOKEN},agent-b:{OTHER}"}
    env["DECIGRAPH_FSYNC"] = "never"
    proc, url = start_serve(data, env)
    try:
        yield Server(url, data)
    finally:
        stop_serve(proc)


def replayed(server: Server) -> DecisionStore:
    """The server's store rebuilt from its whole log, read-only, beside the running server."""
    return DecisionStore.open(server.data, StoreOptions(read_only=True, use_snapshot=False))


def log_lines(server: Server) -> int:
    return len((server.data / "events.jsonl").read_bytes().splitlines())


def test_supersession_is_reported_in_every_answer_filter_and_export(server: Server) -> None:
    old = server.ok(
        "cstp.recordDecision",
        {"decision": "Run database migrations by hand before each release", "project": "sup"},
    )["id"]
    new = server.ok(
        "cstp.recordDecision",
        {
            "decision": "Run database migrations automatically in the CI pipeline",
            "project": "sup",
            "supersedes": [old],
        },
    )["id"]
    got_old = server.ok("cstp.getDecision", {"id": old})["decision"]
    got_new = server.ok("cstp.getDecision", {"id": new})["decision"]
    assert (got_old["lifecycle"], got_old["supersededBy"]) == ("superseded", [new])
    assert (got_new["lifecycle"], got_new["supersedes"]) == ("accepted", [old])

    listed = server.ok("cstp.listDecisions", {"project": "sup", "status": "superseded"})
    assert [(d["id"], d["lifecycle"]) for d in listed["decisions"]] == [(old, "superseded")]
    queried = server.ok(
        "cstp.queryDecisions",
        {"query": "database migrations", "filters": {"project": "sup", "status": "superseded"}},
    )
    assert [(d["id"], d["lifecycle"]) for d in queried["decisions"]] == [(old, "superseded")]
    recalled = server.ok(
        "cstp.recall",
        {"query": "database migrations", "filters": {"project": "sup", "lifecycle": "superseded"}},
    )
    assert [(r["id"], r["lifecycle"]) for r in recalled["results"]] == [(old, "superseded")]
    current = server.ok(
        "cstp.recall", {"query": "database migrations", "filters": {"project": "sup"}}
    )
    assert [r["id"] for r in current["results"]] == [new]

    auth = {"Authorization": f"Bearer {TOKEN}"}
    doc = httpx.get(f"{server.url}/graph/export", params={"format": "json"}, headers=auth).json()
    assert {n["id"]: n["lifecycle"] for n in doc["nodes"]}[old] == "superseded"
    cli = subprocess.run(
        [*EXPORT, "--data-dir", str(server.data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    exported = json.loads(cli.stdout)
    assert {n["id"]: n["lifecycle"] for n in exported["nodes"]}[old] == "superseded"


def test_reviews_are_history_and_a_no_op_update_writes_nothing(server: Server) -> None:
    node_id = server.ok(
        "cstp.recordDecision", {"decision": "Cache product pages in Varnish", "confidence": 0.6}
    )["id"]
    server.ok(
        "cstp.reviewDecision",
        {"id": node_id, "outcome": "partial", "actualResult": "hit rate 40%", "lessons": "warm it"},
    )
    server.ok(
        "cstp.reviewDecision", {"id": node_id, "outcome": "success", "notes": "tuned"}, token=OTHER
    )
    got = server.ok("cstp.getDecision", {"id": node_id})["decision"]
    assert [(r["outcome"], r["reviewedBy"]) for r in got["reviews"]] == [
        ("partial", "agent-a"),
        ("success", "agent-b"),
    ]
    assert got["reviews"][0]["lessons"] == "warm it"
    assert (got["outcome"], got["reviewedBy"], got["reviewNotes"]) == (
        "success",
        "agent-b",
        "tuned",
    )
    with replayed(server) as store:
        history = [r.model_dump(mode="json") for r in store.get(node_id).reviews()]
    assert [(r["outcome"], r["reviewed_at"]) for r in history] == [
        (r["outcome"], r["reviewedAt"]) for r in got["reviews"]
    ]

    before = log_lines(server)
    same = {"decision": got["decision"], "confidence": 0.6}
    answer = server.ok("cstp.updateDecision", {"id": node_id, "updates": same})
    assert (answer["changed"], answer["updated_fields"]) == ([], [])
    assert answer["version"] == got["version"]
    assert log_lines(server) == before
    assert server.ok("cstp.getDecision", {"id": node_id})["decision"]["version"] == got["version"]


def test_recall_paths_show_edges_as_stored_and_take_include_reasons(server: Server) -> None:
    pg = server.ok(
        "cstp.recordDecision",
        {
            "decision": "Use PostgreSQL as the primary datastore for the inventory service",
            "reasons": [{"type": "analysis", "text": "the team runs it already"}],
        },
    )["id"]
    orm = server.ok(
        "cstp.recordDecision", {"decision": "Access the inventory database through SQLAlchemy"}
    )["id"]
    server.ok("cstp.linkDecisions", {"sourceId": orm, "targetId": pg, "edgeType": "depends_on"})
    answer = server.ok(
        "cstp.recall",
        {
            "query": "why PostgreSQL for the inventory service",
            "includeReasons": True,
            "explain": True,
        },
    )
    results: list[dict[str, Any]] = answer["results"]
    by_id = {r["id"]: r for r in results}
    assert by_id[pg]["reasons"][0]["text"] == "the team runs it already"
    assert all("reasons" in r for r in results)
    hops = [hop for r in results for hop in r["via"]["path"]]
    with replayed(server) as store:
        for hop in hops:
            assert store.graph.has_edge(hop["from"], hop["to"], hop["edgeType"]), hop
    between = [h for h in hops if {h["from"], h["to"]} == {pg, orm}]
    assert all((h["from"], h["edgeType"], h["to"]) == (orm, "depends_on", pg) for h in between)
    starts: dict[str, str] = {}
    for r in results:  # each path is a walk that ends at its hit and visits nothing twice
        path = r["via"]["path"]
        if not path:
            continue
        walk = [walked(path[0])[0], *(walked(hop)[1] for hop in path)]
        assert walk[-1] == r["id"]
        assert len(set(walk)) == len(walk)
        starts[r["id"]] = walk[0]
    for hit in starts:  # and no hit is explained, through the start of its path, by itself
        seen, current = {hit}, hit
        while current in starts:
            current = starts[current]
            assert current not in seen
            seen.add(current)


def walked(hop: dict[str, Any]) -> tuple[str, str]:
    """(walked from, walked to) of a hop."""
    if hop["walked"] == "backward":
        return hop["to"], hop["from"]
    return hop["from"], hop["to"]
