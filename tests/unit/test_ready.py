"""The ready queue (``cstp.ready``): blocked only by what cannot be relied on, every item with
its decision's text and, for blocked work, the reason in words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from service.usecases import Decigraph
from tests.support.fakes import fake_app, rpc_result


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


call = rpc_result


# A platform session: key, statement, what it depends on. Nothing here is reviewed unless
# REVIEWS says so, as in a real session where reviews come weeks later.
SESSION: list[tuple[str, str, list[str]]] = [
    ("k8s", "Run every service on the shared Kubernetes cluster", []),
    ("pg", "Use PostgreSQL 16 as the primary datastore", []),
    ("orm", "Access PostgreSQL through SQLAlchemy 2.0", ["pg"]),
    ("alembic", "Run schema migrations with Alembic in CI", ["orm"]),
    ("pool", "Put PgBouncer in front of every database", ["pg", "k8s"]),
    ("helm", "Package services as Helm charts", ["k8s"]),
    ("argo", "Deploy Helm charts with Argo CD", ["helm"]),
    ("otel", "Instrument services with OpenTelemetry", ["k8s"]),
    ("tempo", "Keep traces in Grafana Tempo for 14 days", ["otel"]),
    ("loki", "Ship logs to Loki with a 30 day retention", ["k8s"]),
    ("alerts", "Page on SLO burn rate, not on raw error counts", ["otel"]),
    ("vault", "Keep secrets in Vault with Kubernetes auth", ["k8s"]),
    ("rotate", "Rotate database credentials every 24 hours", ["vault", "pg"]),
    ("backup", "Back up PostgreSQL with pgBackRest to object storage", ["pg"]),
    ("restore", "Test a full restore every month", ["backup"]),
    ("kafka", "Publish domain events to Kafka", ["k8s"]),
    ("schema", "Register event schemas in a schema registry", ["kafka"]),
    ("outbox", "Write events through a transactional outbox table", ["pg", "kafka"]),
    ("cdc", "Capture outbox rows with Debezium", ["outbox"]),
    ("canary", "Roll out risky changes as 5% canaries", ["argo"]),
    ("flags", "Gate unfinished features behind feature flags", []),
    ("cleanup", "Delete stale feature flags after 60 days", ["flags"]),
    ("sso", "Sign engineers into every tool with SSO", []),
    ("mfa", "Require hardware keys for production access", ["sso"]),
    ("audit", "Keep an audit log of production access for a year", ["mfa"]),
    ("costs", "Tag every cloud resource with its owning team", []),
    ("budget", "Alert teams at 80% of their monthly cloud budget", ["costs"]),
    ("spot", "Run batch jobs on spot instances", ["k8s"]),
    ("reports", "Move the monthly cost reports onto the new warehouse", ["warehouse"]),
    ("warehouse", "Load analytics into a managed warehouse", []),
]
PROPOSED = {"warehouse"}  # only proposed: reports cannot build on it yet
REVIEWS = {"cdc": "failure", "backup": "success"}  # restore builds on a done backup
BLOCKS = [("restore", "spot")]  # spot waits until the first restore test is done


def play(app: Decigraph) -> dict[str, str]:
    ids: dict[str, str] = {}
    order = sorted(SESSION, key=lambda row: row[0] != "warehouse")  # targets first
    for key, text, _ in order:
        ids[key] = call(app, "recordDecision", {"decision": text})["id"]
        if key in PROPOSED:
            call(app, "setLifecycle", {"id": ids[key], "lifecycle": "proposed"})
    for key, _, needs in SESSION:
        for target in needs:
            link = {"sourceId": ids[key], "targetId": ids[target], "edgeType": "depends_on"}
            call(app, "linkDecisions", link)
    for key, outcome in REVIEWS.items():
        call(app, "reviewDecision", {"id": ids[key], "outcome": outcome})
    for source, target in BLOCKS:
        link = {"sourceId": ids[source], "targetId": ids[target], "edgeType": "blocks"}
        call(app, "linkDecisions", link)
    # A dependant of cdc, which failed: it is blocked; what builds on *it* is not listed again.
    ids["replay"] = call(app, "recordDecision", {"decision": "Replay CDC streams into search"})[
        "id"
    ]
    link = {"sourceId": ids["replay"], "targetId": ids["cdc"], "edgeType": "depends_on"}
    call(app, "linkDecisions", link)
    return ids


def test_the_queue_lists_only_what_cannot_proceed(app: Decigraph) -> None:
    ids = play(app)
    key = {v: k for k, v in ids.items()}
    texts = {k: t for k, t, _ in SESSION}
    actions = call(app, "ready", {"limit": 50, "actionTypes": ["unblock"]})["actions"]
    assert sorted(key[a["decisionId"]] for a in actions) == ["replay", "reports", "spot"]
    why = {key[a["decisionId"]]: a["reason"] for a in actions}
    assert why["reports"].startswith(f"depends on {ids['warehouse']} 'Load analytics")
    assert why["reports"].endswith("which is only proposed, not accepted")
    assert why["replay"].endswith("which was reviewed as a failure")
    assert why["spot"].startswith(f"waits for {ids['restore']} 'Test a full restore")
    assert "not done yet" in why["spot"]
    for a in actions:
        if key[a["decisionId"]] in texts:
            assert a["text"] == texts[key[a["decisionId"]]]
    assert next(a for a in actions if key[a["decisionId"]] == "replay")["text"] == (
        "Replay CDC streams into search"
    )

    # getBlockedChain agrees, and says why for each chain.
    chains = call(app, "getBlockedChain", {})["blocked"]
    assert sorted(key[c["nodeId"]] for c in chains) == ["replay", "reports", "spot"]
    reasons = {key[c["nodeId"]]: [b["reason"] for b in c["blockers"]] for c in chains}
    assert reasons == {"reports": ["proposed"], "replay": ["failed"], "spot": ["pending"]}
    assert call(app, "getBlockedChain", {"nodeId": ids["alembic"]})["blocked"] is False

    # Done: spot no longer waits; accepted: reports may build on the warehouse.
    call(app, "reviewDecision", {"id": ids["restore"], "outcome": "partial"})
    call(app, "setLifecycle", {"id": ids["warehouse"], "lifecycle": "accepted"})
    actions = call(app, "ready", {"limit": 50, "actionTypes": ["unblock"]})["actions"]
    assert [key[a["decisionId"]] for a in actions] == ["replay"]


def test_every_item_carries_its_text(app: Decigraph) -> None:
    shaky = call(
        app,
        "recordDecision",
        {"decision": "Migrate billing to the new ledger", "stakes": "high", "confidence": 0.3},
    )["id"]
    actions = call(app, "ready", {"limit": 10})["actions"]
    assert [(a["type"], a["decisionId"], a["text"]) for a in actions] == [
        ("low_confidence", shaky, "Migrate billing to the new ledger")
    ]
