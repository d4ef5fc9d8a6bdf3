"""The graph guardrail on the examples issue 12 names, through a real server and the CSTP
request shapes: what it must block (a salient decision contradicted, whatever its context) and
what it must let through (a scoped exception, the same tool for another purpose, anything
against a decision nothing relies on)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.rpc import Rpc, serving

TOKEN = "guardrail-examples-token-0123456789"
CONTEXT = "The order service already runs on it and the DBAs support it on RDS."


@pytest.fixture(scope="module")
def rpc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rpc]:
    with serving(tmp_path_factory.mktemp("examples") / "data", TOKEN) as client:
        yield client


def pillar(rpc: Rpc, text: str, context: str | None = None, dependents: int = 3) -> str:
    """Record ``text`` and ``dependents`` decisions that depend on it (salient, > 0.5)."""
    params: dict[str, Any] = {"decision": text, "category": "architecture", "stakes": "high"}
    if context:
        params["context"] = context
    pid = rpc.ok("cstp.recordDecision", params)["id"]
    for n in range(dependents):
        dep = rpc.ok(
            "cstp.recordDecision",
            {"decision": f"Component {n} of {text[:40]!r} builds on it", "category": "process"},
        )["id"]
        rpc.ok("cstp.linkDecisions", {"sourceId": dep, "targetId": pid, "edgeType": "depends_on"})
    return pid


def check(rpc: Rpc, text: str) -> dict[str, Any]:
    return rpc.ok("cstp.checkGuardrails", {"action": {"description": text, "stakes": "high"}})


def test_a_lone_decision_protects_nothing(rpc: Rpc) -> None:
    """On a fresh two-node graph a decision nothing depends on never blocks."""
    lone = rpc.ok("cstp.recordDecision", {"decision": "Use CockroachDB for the audit store"})
    rival = "Use YugabyteDB for the audit store"
    assert check(rpc, rival)["allowed"] is True
    recorded = rpc.ok("cstp.recordDecision", {"decision": rival})
    assert recorded["success"] is True
    del lone


@pytest.mark.parametrize(
    ("stored", "context", "new"),
    [
        (
            "Use PostgreSQL 16 as the primary datastore for the payments ledger",
            CONTEXT,
            "Use MySQL as the primary datastore for the payments ledger",
        ),
        ("Use Kafka for payment events", None, "Use RabbitMQ for payment events"),
        (
            "Use Terraform for all infrastructure",
            "Every team already knows HCL; modules exist for our VPCs.",
            "Use Pulumi for all infrastructure",
        ),
        (
            "Use MongoDB for the product catalogue",
            None,
            "Do not use MongoDB for the product catalogue; use PostgreSQL",
        ),
    ],
)
def test_salient_decisions_are_protected_whatever_their_context(
    rpc: Rpc, stored: str, context: str | None, new: str
) -> None:
    target = pillar(rpc, stored, context)
    verdict = check(rpc, new)
    assert verdict["allowed"] is False, verdict
    assert target in str(verdict["violations"])
    refused = rpc.call("cstp.recordDecision", {"decision": new})
    assert refused["error"]["code"] == -32004
    # The guardrail's advice is one call: supersede it in the same record.
    done = rpc.ok("cstp.recordDecision", {"decision": new, "supersedes": [target]})
    old = rpc.ok("cstp.getDecision", {"id": target})["decision"]
    assert old["lifecycle"] == "superseded"
    assert old["supersededBy"] == [done["id"]]


@pytest.mark.parametrize(
    ("stored", "new"),
    [
        (
            "Use PostgreSQL as the primary datastore",
            "Use SQLite for the primary datastore in development",
        ),
        ("Use Datadog for metrics", "Use Datadog for logs"),
        ("Run stateless services on Kubernetes", "Run stateless services on Kubernetes with Istio"),
        ("Deploy the web tier to us-east-1", "Deploy the EU web tier to eu-west-1"),
    ],
)
def test_compatible_decisions_pass_a_salient_one(rpc: Rpc, stored: str, new: str) -> None:
    pillar(rpc, stored)
    verdict = check(rpc, new)
    assert verdict["allowed"] is True, verdict
    assert rpc.ok("cstp.recordDecision", {"decision": new})["success"] is True
