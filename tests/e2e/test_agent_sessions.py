"""Three scripted agent sessions over the real server (model, ChromaDB, token auth, a socket).

Each session (``tests/e2e/sessions/``: a database migration, an incident response, a product
launch; 30+ decisions each, written for this test) is played the way an agent plays it:
record, link, review, supersede, ask the guardrails, and resolve what the contradiction judge
raises. The test then asserts what an agent relies on: the contradictions the session writes
are raised (a plain same-setting substitution by the judge; a contradiction the agent names,
by the gate), a contradiction of a relied-on decision is refused with nothing written and
checkGuardrails says so first, every pair the judge raises is answered in tiers and can be
declared compatible for good (whether it raises a pair the session did not write as one is the
judge's call, not this test's), a supersession shows everywhere, the ready queue is short and
right, recall answers the session's "why" question, and every explanation path is made of
edges that exist as shown.
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
    """A session after it ran: ids by key, the contradictions it left (suspected or confirmed,
    by key pair), and what went wrong."""

    ids: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    contradictions: dict[frozenset[str], str] = field(default_factory=dict)
    declared_compatible: set[frozenset[str]] = field(default_factory=set)

    def key(self, node_id: str) -> str:
        return next((k for k, v in self.ids.items() if v == node_id), node_id)


RECORD_FIELDS = ("decision", "context", "category", "stakes", "confidence", "reasons")
#: Rounds an agent spends declaring blocked pairs compatible before it gives up on a record.
RESOLVE_ROUNDS = 3


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
        named = [played.ids[k] for k in step.get("contradicts", ())]
        if named:
            params["contradicts"] = named
        blocker = step.get("blocked_by")
        if blocker is not None:
            _expect_blocked(rpc, played, key, params, played.ids[blocker])
            continue
        answer = _record_resolving_blocks(rpc, played, key, params)
        if answer is None:
            continue
        played.ids[key] = node_id = answer["id"]
        played.texts[key] = step["decision"]
        settled = {*supersedes, *named}
        for pair in played.declared_compatible:
            settled |= {played.ids[k] for k in pair - {key}} if key in pair else set()
        raised = _raised_pairs(played, key, answer, settled)
        expected = set(step.get("flags", ()))
        missing = expected - set(raised)
        if missing:
            played.problems.append(
                f"{key}: not raised as contradicting {sorted(missing)} (raised {raised})"
            )
        for target in expected & set(raised):
            played.contradictions[frozenset((key, target))] = "suspected"
        for target in step.get("contradicts", ()):
            played.contradictions[frozenset((key, target))] = "confirmed"
        # What the judge raised beyond what the session wrote: the agent reads both as holding
        # and declares them compatible (one call), which withdraws the suspected edges.
        others = sorted(set(raised) - expected)
        if others:
            rpc.ok(
                "cstp.updateDecision",
                {"id": node_id, "compatibleWith": [played.ids[k] for k in others]},
            )
            played.declared_compatible |= {frozenset((key, k)) for k in others}
        for edge_type in LINK_TYPES:
            for target in step.get(edge_type, ()):
                link = {"sourceId": node_id, "targetId": played.ids[target], "edgeType": edge_type}
                rpc.ok("cstp.linkDecisions", link)
    return played


def _record_resolving_blocks(
    rpc: Rpc, played: Played, key: str, params: dict[str, Any]
) -> dict[str, Any] | None:
    """Record ``params``; a block the session did not write (the judge's reading of a pair)
    is resolved as the guardrail advises for two decisions that both hold: ``compatibleWith``
    in the same record. The answer, or None (with a problem noted) when it stays refused."""
    compatible: list[str] = []
    for _ in range(RESOLVE_ROUNDS):
        answer = rpc.call("cstp.recordDecision", params)
        if "error" not in answer:
            result: dict[str, Any] = answer["result"]
            return result
        error = answer["error"]
        if error["code"] != -32004:
            played.problems.append(f"{key}: refused: {error['message']}")
            return None
        check = check_record(rpc, params)
        blocks = [c["id"] for c in check.get("conflicts", ()) if c["tier"] == "block"]
        if check["allowed"] or not blocks:
            played.problems.append(
                f"{key}: refused for {error['message']!r}; checkGuardrails: {check}"
            )
            return None
        messages = " ".join(v["message"] for v in error.get("data", {}).get("violations", ()))
        unnamed = [b for b in blocks if b not in messages]
        if unnamed:
            played.problems.append(f"{key}: refusal does not name blocks {unnamed}: {messages}")
        compatible += blocks
        params = {**params, "compatibleWith": compatible}
        played.declared_compatible |= {frozenset((key, played.key(b))) for b in blocks}
    played.problems.append(f"{key}: still refused after declaring {compatible} compatible")
    return None


def check_record(rpc: Rpc, params: dict[str, Any]) -> dict[str, Any]:
    """checkGuardrails on the record ``params`` would make (the same fields)."""
    action = {k: v for k, v in params.items() if k != "decision"}
    action["description"] = params["decision"]
    verdict: dict[str, Any] = rpc.ok("cstp.checkGuardrails", {"action": action})
    return verdict


def _raised_pairs(
    played: Played, key: str, answer: dict[str, Any], settled: set[str]
) -> dict[str, str]:
    """``{target key: tier}`` of the pairs a written record raised, after checking the tier
    contract: a written record raises reviews only, each shown as a graph-contradiction
    warning naming its decision, never one the record supersedes or was declared compatible
    with."""
    raised: dict[str, str] = {}
    warnings = [
        w["message"]
        for w in answer["guardrail_warnings"]
        if w["guardrailId"] == "graph-contradiction" and w["severity"] == "warn"
    ]
    for conflict in answer.get("conflicts", ()):
        target = played.key(conflict["id"])
        raised[target] = conflict["tier"]
        if conflict["tier"] != "review":
            played.problems.append(f"{key}: written with a {conflict['tier']} pair: {conflict}")
        if not any(conflict["id"] in message for message in warnings):
            played.problems.append(f"{key}: review pair {target} is not among the warnings")
        if not 0 <= conflict["p"] <= 1 or not conflict["reason"]:
            played.problems.append(f"{key}: malformed conflict {conflict}")
        if conflict["id"] in settled:
            played.problems.append(f"{key}: raised {target}, which it settles")
    return raised


def _expect_blocked(
    rpc: Rpc, played: Played, key: str, params: dict[str, Any], blocker: str
) -> None:
    """The gate refuses the record for ``blocker`` and writes nothing; checkGuardrails says the
    same first."""
    check = check_record(rpc, params)
    if check["allowed"] or blocker not in str(check["violations"]):
        played.problems.append(f"{key}: checkGuardrails does not block it for {blocker}")
    before = rpc.ok("cstp.getStats", {})["total"]
    answer = rpc.call("cstp.recordDecision", params)
    if "error" not in answer:
        played.ids[key] = answer["result"]["id"]
        played.problems.append(f"{key}: recorded, expected a block for {played.key(blocker)}")
        return
    error = answer["error"]
    messages = " ".join(v["message"] for v in error.get("data", {}).get("violations", ()))
    if error["code"] != -32004 or blocker not in messages:
        played.problems.append(f"{key}: refused for {error['message']!r}, expected {blocker}")
    if rpc.ok("cstp.getStats", {})["total"] != before:
        played.problems.append(f"{key}: refused, yet something was written")


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
    # The contradictions left are exactly those the session wrote: what the judge raised
    # beyond them was declared compatible, and is gone for good.
    rows = rpc.ok("cstp.findContradictions", {"limit": 100})["contradictions"]
    left = {frozenset((played.key(r["a"]), played.key(r["b"]))): r["status"] for r in rows}
    if left != played.contradictions:
        problems.append(f"findContradictions: {left}, expected {played.contradictions}")
    undone = played.declared_compatible & set(left)
    if undone:
        problems.append(f"declared compatible, yet still contradicting: {undone}")
    # The ready queue: exactly the expected items (and one per contradiction left), each
    # carrying its decision's text.
    actions = rpc.ok("cstp.ready", {"limit": 50})["actions"]
    ready = {
        (a["type"], played.key(a["decisionId"]))
        for a in actions
        if a["type"] != "resolve_contradiction"
    }
    if ready != session.READY:
        problems.append(f"ready: {sorted(ready)}, expected {sorted(session.READY)}")
    to_resolve = {
        frozenset((played.key(a["decisionId"]), played.key(a["reason"].split()[1])))
        for a in actions
        if a["type"] == "resolve_contradiction"
    }
    if to_resolve != set(played.contradictions):
        problems.append(f"ready: contradictions {to_resolve}, expected {played.contradictions}")
    for a in actions:
        key = played.key(a["decisionId"])
        if key in played.texts and a.get("text") != played.texts[key]:
            problems.append(f"ready item for {key} does not carry its text: {a}")
    # Recall answers the session's "why" question, and its explanations are true.
    question, wanted = session.WHY
    results = rpc.ok("cstp.recall", {"query": question, "limit": 5, "explain": True})["results"]
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
