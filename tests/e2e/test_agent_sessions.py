"""Three scripted agent sessions over the real server (model, ChromaDB, token auth, a socket).

Each session (``tests/e2e/sessions/``: a database migration, an incident response, a product
launch; 30+ decisions each, written for this test) is played the way an agent plays it:
record, link, review, supersede, ask the guardrails. The test then asserts what an agent relies
on: the contradiction flags and blocks are exactly the expected ones (none where there is no
conflict), a supersession shows everywhere, the ready queue is short and right, recall answers
the session's "why" question, and every explanation path is made of edges that exist as shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.e2e.sessions import incident, launch, migration
from tests.support.rpc import Rpc, serving

TOKEN = "agent-sessions-token-0123456789"
LINK_TYPES = ("depends_on", "caused_by", "refines")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Rpc]:
    """A fresh server per session: the ready queue and the contradictions are store-wide."""
    with serving(tmp_path / "data", TOKEN) as client:
        yield client


@dataclass
class Played:
    """A session after it ran: ids by key, and what each record was flagged or blocked for."""

    ids: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def key(self, node_id: str) -> str:
        return next((k for k, v in self.ids.items() if v == node_id), node_id)


RECORD_FIELDS = ("decision", "context", "category", "stakes", "confidence", "reasons")


def play(rpc: Rpc, session: ModuleType) -> Played:
    played = Played()
    for step in session.STEPS:
        if "review" in step:
            params = {"id": played.ids[step["review"]], "outcome": step["outcome"]}
            params["actualResult"] = step["result"]
            if "lessons" in step:
                params["lessons"] = step["lessons"]
            rpc.ok("cstp.reviewDecision", params)
            continue
        key = step["key"]
        params = {name: step[name] for name in RECORD_FIELDS if name in step}
        params["project"] = session.PROJECT
        supersedes = [played.ids[k] for k in step.get("supersedes", ())]
        if supersedes:
            params["supersedes"] = supersedes
        answer = rpc.call("cstp.recordDecision", params)
        blocker = step.get("blocked_by")
        if blocker is not None:
            _expect_blocked(rpc, played, key, params, answer, played.ids[blocker])
            continue
        if "error" in answer:
            played.problems.append(f"{key}: refused: {answer['error']['message']}")
            continue
        result = answer["result"]
        played.ids[key] = node_id = result["id"]
        played.texts[key] = step["decision"]
        flagged = {
            played.key(s["targetId"])
            for s in result["suggestions"]
            if s["edgeType"] == "contradicts" and s["targetId"] not in supersedes
        }
        expected = set(step.get("flags", ()))
        if flagged != expected:
            reasons = [s["reason"] for s in result["suggestions"] if s["edgeType"] == "contradicts"]
            played.problems.append(
                f"{key}: flagged as contradicting {sorted(flagged)}, expected {sorted(expected)}"
                f" ({reasons})"
            )
        for edge_type in LINK_TYPES:
            for target in step.get(edge_type, ()):
                link = {"sourceId": node_id, "targetId": played.ids[target], "edgeType": edge_type}
                rpc.ok("cstp.linkDecisions", link)
    return played


def _expect_blocked(
    rpc: Rpc,
    played: Played,
    key: str,
    params: dict[str, Any],
    answer: dict[str, Any],
    blocker: str,
) -> None:
    """The gate refused the record for ``blocker``, and checkGuardrails says the same first."""
    if "error" not in answer:
        played.ids[key] = answer["result"]["id"]
        played.problems.append(f"{key}: recorded, expected a block for {played.key(blocker)}")
        return
    error = answer["error"]
    messages = " ".join(v["message"] for v in error.get("data", {}).get("violations", ()))
    if error["code"] != -32004 or blocker not in messages:
        played.problems.append(f"{key}: refused for {error['message']!r}, expected {blocker}")
    check = rpc.ok("cstp.checkGuardrails", {"action": {"description": params["decision"]}})
    if check["allowed"]:
        played.problems.append(f"{key}: checkGuardrails allows what recordDecision refused")


def assert_session(rpc: Rpc, session: ModuleType) -> None:
    played = play(rpc, session)
    problems = played.problems
    # Supersession is visible in getDecision and in the list filter, both ways.
    for old, new in session.SUPERSEDED.items():
        got = rpc.ok("cstp.getDecision", {"id": played.ids[old]})["decision"]
        if got.get("lifecycle") != "superseded" or got.get("supersededBy") != [played.ids[new]]:
            problems.append(
                f"getDecision({old}): lifecycle {got.get('lifecycle')!r}, "
                f"supersededBy {got.get('supersededBy')!r}, expected superseded by {new}"
            )
        newer = rpc.ok("cstp.getDecision", {"id": played.ids[new]})["decision"]
        if played.ids[old] not in (newer.get("supersedes") or ()):
            problems.append(f"getDecision({new}) does not list {old} under supersedes")
    listed = rpc.ok(
        "cstp.listDecisions", {"status": "superseded", "project": session.PROJECT, "limit": 100}
    )["decisions"]
    listed_keys = {played.key(row["id"]) for row in listed}
    if listed_keys != set(session.SUPERSEDED):
        problems.append(f"listDecisions(superseded): {sorted(listed_keys)}")
    wrong = [played.key(r["id"]) for r in listed if r.get("lifecycle") != "superseded"]
    if wrong:
        problems.append(f"listDecisions(superseded) rows not saying superseded: {wrong}")
    # The ready queue: exactly the expected items, each carrying its decision's text.
    actions = rpc.ok("cstp.ready", {"limit": 50})["actions"]
    ready = {(a["type"], played.key(a["decisionId"])) for a in actions}
    if ready != session.READY:
        problems.append(f"ready: {sorted(ready)}, expected {sorted(session.READY)}")
    for a in actions:
        key = played.key(a["decisionId"])
        if key in played.texts and a.get("text") != played.texts[key]:
            problems.append(f"ready item for {key} does not carry its text: {a}")
    # Recall answers the session's "why" question, and its explanations are true.
    question, wanted = session.WHY
    results = rpc.ok("cstp.recall", {"query": question, "limit": 5})["results"]
    found = {played.key(r["id"]) for r in results}
    if not wanted <= found:
        problems.append(f"recall {question!r}: {sorted(found)}, missing {sorted(wanted - found)}")
    for r in results:
        for hop in r["via"]["path"]:
            if not _edge_exists(rpc, hop["from"], hop["to"], hop["edgeType"]):
                problems.append(
                    f"recall path of {played.key(r['id'])} shows {played.key(hop['from'])} "
                    f"-{hop['edgeType']}-> {played.key(hop['to'])}, which is not stored"
                )
    assert not problems, "\n".join(problems)


def _edge_exists(rpc: Rpc, source: str, target: str, edge_type: str) -> bool:
    page = rpc.ok(
        "cstp.getNeighbors",
        {"nodeId": source, "direction": "outgoing", "edgeType": edge_type, "limit": 100},
    )
    # A symmetric edge (temporal, relates_to, contradicts...) is one edge whichever end it is
    # read from; getNeighbors reports it with its stored ends.
    ends = {source, target}
    return any(
        n["edge"]["targetId"] == target
        or (n["direction"] == "both" and {n["edge"]["sourceId"], n["edge"]["targetId"]} == ends)
        for n in page["neighbors"]
    )


@pytest.mark.parametrize("session", [migration, incident, launch], ids=lambda m: m.PROJECT)
def test_agent_session(server: Rpc, session: ModuleType) -> None:
    assert_session(server, session)


def test_sessions_are_long_enough() -> None:
    for session in (migration, incident, launch):
        records = [s for s in session.STEPS if "key" in s]
        assert len(records) >= 30, session.PROJECT
