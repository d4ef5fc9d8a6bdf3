"""History outside JSON-RPC: the real ``decigraph history`` / ``export --as-of`` commands, and
the analyst API's ``history()`` and ``as_of()`` tables."""

from __future__ import annotations

import json
from pathlib import Path

from graph.enums import EdgeType, Lifecycle
from graph.importer import read_export
from service.analyst import Analyst
from service.client import InProcess
from tests.conftest import StoreFactory, decision
from tests.integration.test_cli import cli
from tests.support.fakes import fake_app


def test_history_and_export_as_of_through_the_cli(open_store: StoreFactory, tmp_path: Path) -> None:
    store = open_store()
    old = store.record(decision("Run the ETL with cron on the batch host"), "planner")
    store.update(old.id, {"confidence": 0.4}, "planner")
    before_newer = store.seq
    newer = store.record(decision("Run the ETL on Airflow with retries"), "planner")
    store.supersede(newer.id, old.id, "planner")
    store.forget(newer.id, "planner")
    data = str(store.data_dir)
    store.close()

    shown = cli("history", old.id, "--data-dir", data)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    # recorded, updated, superseded; and the supersession dropped when the newer was forgotten
    assert lines[0] == f"{old.id} (exists): 4 events"
    assert "unlinked" in lines[4]
    assert "updated (confidence: null -> 0.4)" in lines[2]
    assert "superseded" in lines[3]
    as_json = json.loads(cli("history", newer.id, "--data-dir", data, "--json").stdout)
    assert as_json["exists"] is False
    assert [e["action"] for e in as_json["events"]] == ["recorded", "supersedes", "forgotten"]
    missing = cli("history", "deadbeef", "--data-dir", data)
    assert missing.returncode != 0
    assert "deadbeef" in missing.stderr

    # The export as it stood before the newer decision: one node, its lifecycle then.
    then = cli("export", "--data-dir", data, "--as-of", str(before_newer))
    assert then.returncode == 0, then.stderr
    doc = json.loads(then.stdout)
    assert [n["id"] for n in doc["nodes"]] == [old.id]
    assert doc["graph"]["asOf"]["seq"] == before_newer
    assert doc["nodes"][0]["lifecycle"] == Lifecycle.ACCEPTED.value
    assert "salience" in doc["nodes"][0]
    # After the supersession (before the forget), the old one is reported superseded.
    mid = json.loads(cli("export", "--data-dir", data, "--as-of", str(before_newer + 2)).stdout)
    lifecycles = {n["id"]: n["lifecycle"] for n in mid["nodes"]}
    assert lifecycles == {old.id: "superseded", newer.id: "accepted"}
    nodes, edges = read_export("json", {"graph.json.json": json.dumps(mid)})
    assert {e.type for e in edges} == {EdgeType.SUPERSEDES}  # and the export reads back
    assert all(n.lifecycle is Lifecycle.ACCEPTED for n in nodes)
    bad = cli("export", "--data-dir", data, "--as-of", "99999")
    assert bad.returncode != 0
    assert "asOf" in bad.stderr


def test_analyst_history_and_as_of_tables(tmp_path: Path) -> None:
    with fake_app(tmp_path / "data", seed=2) as app:
        dg = Analyst(InProcess(app))
        first = dg.call(
            "cstp.recordDecision",
            decision="Keep invoices in integer cents",
            category="architecture",
            skipGuardrails=True,
        )["id"]
        seq = app.store.seq
        dg.call("cstp.updateDecision", id=first, updates={"confidence": 0.95})
        dg.call(
            "cstp.recordDecision",
            decision="Publish the billing API with OpenAPI 3.1",
            skipGuardrails=True,
        )
        table = dg.history(first)
        assert list(table["action"])[:1] == ["recorded"]
        assert "confidence: None -> 0.95" in list(table["changes"])
        then = dg.as_of(seq)
        assert list(then.decisions()["id"]) == [first]
        assert then.decisions()["confidence"].isna().all()
        assert len(dg.decisions()) == 2  # the live view is untouched
        assert then.call("cstp.getHighSalience")["asOf"]["seq"] == seq
        assert list(then.salience()["id"]) == [first]
