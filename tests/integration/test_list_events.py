"""``cstp.listEvents`` through the JSON-RPC dispatcher over a real store and its indexes
(embedded ChromaDB; the hash embedder stands in for the model): paging both ways, the filters,
the scan bound, and params refused naming the field."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from service.composition import open_app
from service.settings import Settings
from service.usecases import feed
from tests.support.fakes import HashEmbedder, InProcessRpc


@pytest.fixture(scope="module")
def seeded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[InProcessRpc, dict[str, Any]]]:
    """40 events: 12 decisions (every third in project billing), updates, links, reviews."""
    data = tmp_path_factory.mktemp("list-events") / "data"
    app = open_app(Settings(data_dir=data, fsync="never"), HashEmbedder())
    try:
        client = InProcessRpc(app, "agent-a")
        ids = []
        for n in range(12):
            params: dict[str, Any] = {
                "decision": f"Decision number {n} about subsystem {n}",
                "confidence": 0.7,
                "category": "architecture",
            }
            if n % 3 == 0:
                params["project"] = "billing"
            ids.append(client.ok("recordDecision", params)["id"])
        for n in range(12):
            client.ok("updateDecision", {"id": ids[n], "updates": {"confidence": 0.8}})
        for n in range(1, 12):
            client.ok(
                "linkDecisions", {"sourceId": ids[n], "targetId": ids[0], "edgeType": "depends_on"}
            )
        for n in range(5):
            client.ok("reviewDecision", {"id": ids[n], "outcome": "success"})
        assert app.store.seq == 40
        yield client, {"ids": ids, "head": app.store.seq}
    finally:
        app.close()


def page_all(client: InProcessRpc, params: dict[str, Any]) -> tuple[list[int], int]:
    """Every event an ascending reader gets, page after page; and how many pages it took."""
    seqs: list[int] = []
    after, pages = params.pop("after", 0), 0
    while True:
        page = client.ok("listEvents", {**params, "after": after})
        pages += 1
        seqs += [e["seq"] for e in page["events"]]
        assert page["nextAfter"] >= after
        if page["nextAfter"] == page["head"]:
            return seqs, pages
        after = page["nextAfter"]


def test_ascending_pages_cover_the_log_once_in_order(seeded: tuple[InProcessRpc, Any]) -> None:
    client, facts = seeded
    first = client.ok("listEvents", {"limit": 7})
    assert [e["seq"] for e in first["events"]] == list(range(1, 8))
    assert first["head"] == facts["head"]
    assert first["nextAfter"] == 7
    assert "nextBefore" not in first
    item = first["events"][0]
    assert set(item) == {"seq", "id", "ts", "actor", "op", "nodeIds", "summary"}
    assert item["op"] == "record"
    assert item["actor"] == "agent-a"
    assert item["nodeIds"] == [facts["ids"][0]]
    assert item["summary"] == f"recorded {facts['ids'][0]}: Decision number 0 about subsystem 0"
    seqs, pages = page_all(client, {"limit": 7})
    assert seqs == list(range(1, 41))
    assert pages == 6
    tail = client.ok("listEvents", {"after": 40})
    assert tail == {"events": [], "head": 40, "nextAfter": 40}
    window = client.ok("listEvents", {"after": 10, "before": 14})
    assert [e["seq"] for e in window["events"]] == [11, 12, 13]
    assert window["nextAfter"] == 13


def test_descending_pages_go_back_from_the_head(seeded: tuple[InProcessRpc, Any]) -> None:
    client, _ = seeded
    newest = client.ok("listEvents", {"order": "desc", "limit": 5})
    assert [e["seq"] for e in newest["events"]] == [40, 39, 38, 37, 36]
    assert newest["nextAfter"] == 40  # where a reader of newer events starts
    assert newest["nextBefore"] == 36
    seqs, before = [], newest["nextBefore"]
    while before is not None:
        page = client.ok("listEvents", {"order": "desc", "limit": 9, "before": before, "after": 3})
        seqs += [e["seq"] for e in page["events"]]
        before = page["nextBefore"]
    assert seqs == list(range(35, 3, -1))  # above after=3 only, newest first, each once
    assert client.ok("listEvents", {"order": "desc", "after": 40})["events"] == []


def test_filters_by_op_node_and_project(seeded: tuple[InProcessRpc, Any]) -> None:
    client, facts = seeded
    ids = facts["ids"]
    reviews = client.ok("listEvents", {"ops": ["review"]})
    assert [e["seq"] for e in reviews["events"]] == list(range(36, 41))
    assert {e["summary"] for e in reviews["events"]} == {f"reviewed {i}: success" for i in ids[:5]}
    some = client.ok("listEvents", {"ops": ["update", "review"], "limit": 3, "after": 20})
    assert [e["seq"] for e in some["events"]] == [21, 22, 23]
    assert some["nextAfter"] == 23
    # A node (through the history index): every event naming it, records of later decisions
    # auto-linked to it included; the same as filtering the whole log by nodeIds.
    log = client.ok("listEvents", {"limit": 1000})["events"]
    node = client.ok("listEvents", {"nodeId": ids[2]})
    assert node["events"] == [e for e in log if ids[2] in e["nodeIds"]]
    assert {"record", "update", "link", "review"} <= {e["op"] for e in node["events"]}
    hub = client.ok("listEvents", {"nodeId": ids[0], "ops": ["link"], "order": "desc", "limit": 3})
    assert [e["seq"] for e in hub["events"]] == [35, 34, 33]
    assert hub["nextBefore"] == 33
    paged, pages = page_all(client, {"nodeId": ids[0], "limit": 4})
    assert paged == [e["seq"] for e in log if ids[0] in e["nodeIds"]]
    assert pages == -(-len(paged) // 4)  # the last page knows it is the last
    # A project: every event naming a billing decision (no node changed project here).
    billing = {ids[n] for n in range(12) if n % 3 == 0}
    project = client.ok("listEvents", {"project": "billing", "limit": 1000})["events"]
    assert project == [e for e in log if billing & set(e["nodeIds"])]
    assert {1, 4, 7, 10, 13, 25, 35, 36} <= {e["seq"] for e in project}
    assert client.ok("listEvents", {"project": "nowhere"})["events"] == []


def test_a_filtered_scan_stops_and_says_where(
    seeded: tuple[InProcessRpc, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = seeded
    monkeypatch.setattr(feed, "SCAN_LIMIT", 10)
    monkeypatch.setattr(feed, "BATCH", 4)
    first = client.ok("listEvents", {"ops": ["review"]})
    assert first["events"] == []
    assert first["nextAfter"] == 10  # examined 1..10, none matched: continue from there
    seqs, pages = page_all(client, {"ops": ["review"]})
    assert seqs == list(range(36, 41))
    assert pages == 4  # 1-10, 11-20, 21-30, 31-40
    back = client.ok("listEvents", {"ops": ["record"], "order": "desc"})
    assert back["events"] == []
    assert back["nextBefore"] == 31  # examined 40..31
    seqs, before = [], back["nextBefore"]
    while before is not None:
        page = client.ok("listEvents", {"ops": ["record"], "order": "desc", "before": before})
        seqs += [e["seq"] for e in page["events"]]
        before = page["nextBefore"]
    assert seqs == list(range(12, 0, -1))


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"after": -1}, "after"),
        ({"after": "3"}, "after"),
        ({"after": 41}, "after"),  # beyond the head
        ({"before": 0}, "before"),
        ({"limit": "5"}, "limit"),
        ({"limit": True}, "limit"),
        ({"order": "sideways"}, "order"),
        ({"ops": []}, "ops"),
        ({"ops": "record"}, "ops"),
        ({"ops": ["record", "nope"]}, "ops.1"),
        ({"nodeId": "not-an-id"}, "nodeId"),
        ({"project": ""}, "project"),
        ({"project": "x" * 1000}, "project"),
    ],
)
def test_bad_params_are_refused_naming_the_field(
    seeded: tuple[InProcessRpc, Any], params: dict[str, Any], field: str
) -> None:
    client, _ = seeded
    error = client.call("listEvents", params)["error"]
    assert error["code"] == -32602
    assert error["data"]["field"] == field
    assert error["message"].startswith(f"{field}: ")


def test_a_limit_out_of_range_is_clamped_with_a_warning(seeded: tuple[InProcessRpc, Any]) -> None:
    client, _ = seeded
    big = client.ok("listEvents", {"limit": 5000})
    assert len(big["events"]) == 40
    assert any("limit" in w for w in big["warnings"])
    small = client.ok("listEvents", {"limit": 0})
    assert len(small["events"]) == 1
    assert any("limit" in w for w in small["warnings"])
