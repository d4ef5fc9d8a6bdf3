"""The change feed against a real ``decigraph serve`` over real sockets: ``GET /events``
(backlog then live events while another client writes, reconnection with ``Last-Event-ID``,
filters, auth, a slow reader, shutdown) and webhooks (retries, order, signatures, and no loss
across a restart)."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from graph.drafts import DecisionDraft
from graph.store import DecisionStore, StoreOptions
from tests.e2e.test_serve import ROOT, start_serve, stop_serve
from tests.support.receiver import Receiver
from tests.support.rpc import Rpc
from tests.support.sse import Message, Reader, headers, slow_stream

TOKEN = "feed-agent-a-token-0123456789"
SECRET = "webhook-secret-0123456789"


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DECIGRAPH_")}
    return {**base, "CSTP_AUTH_TOKENS": f"agent-a:{TOKEN}", "DECIGRAPH_FSYNC": "never", **extra}


class Served:
    def __init__(self, url: str) -> None:
        self.url = url
        self.rpc = Rpc(url, TOKEN)

    @property
    def head(self) -> int:
        return int(self.rpc.ok("cstp.listEvents", {"order": "desc", "limit": 1})["head"])

    def record(self, text: str, **fields: Any) -> dict[str, Any]:
        params = {"decision": text, "confidence": 0.7, "category": "architecture", **fields}
        return self.rpc.ok("cstp.recordDecision", params)

    def churn(self, source: str, target: str, count: int) -> list[int]:
        """``count`` events, 100 to a JSON-RPC batch: ``source depends_on target`` linked and
        unlinked in turn (cheap writes: no node changes, nothing to embed); their seqs."""
        edge = {"sourceId": source, "targetId": target}
        seqs: list[int] = []
        for start in range(0, count, 100):
            batch = [
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "cstp.unlinkDecisions" if n % 2 else "cstp.linkDecisions",
                    "params": edge if n % 2 else {**edge, "edgeType": "depends_on"},
                }
                for n in range(start, min(count, start + 100))
            ]
            answers = self.rpc.client.post(f"{self.url}/cstp", json=batch).json()
            seqs += sorted(a["result"]["seq"] for a in answers)
        return seqs


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("feed") / "data"
    proc, url = start_serve(data, env(DECIGRAPH_FEED_HEARTBEAT="1"))
    try:
        yield Served(url)
    finally:
        stop_serve(proc)


def check_events(got: list[Message], first: int) -> list[dict[str, Any]]:
    """Event messages: seqs ``first, first+1...`` in order, ``id`` the seq, ``event`` the op, and
    each ``data`` the canonical line, chained by hash."""
    documents = [m.json() for m in got]
    assert [d["seq"] for d in documents] == list(range(first, first + len(got)))
    for message, document in zip(got, documents, strict=True):
        assert message.id == str(document["seq"])
        assert message.event == document["op"]
        assert set(document) >= {"seq", "id", "ts", "actor", "op", "payload", "prev", "hash"}
    for before, after in itertools.pairwise(documents):
        assert after["prev"] == before["hash"]
    return documents


def test_backlog_then_live_events_while_another_client_writes(served: Served) -> None:
    start = served.head
    a = served.record("Use PostgreSQL for the ledger")["id"]
    b = served.record("Use Redis for the session cache")["id"]
    reader = Reader(served.url, TOKEN, {"after": start})
    try:
        assert reader.status == 200
        backlog = check_events(reader.take(2), start + 1)
        assert [d["payload"]["node"]["id"] for d in backlog] == [a, b]
        writes = [
            served.record("Use Kafka for the outbox")["seq"],
            served.rpc.ok("cstp.updateDecision", {"id": a, "updates": {"confidence": 0.9}})["seq"],
            served.rpc.ok(
                "cstp.linkDecisions", {"sourceId": b, "targetId": a, "edgeType": "depends_on"}
            )["seq"],
        ]
        live = check_events(reader.take(3), start + 3)
        assert [d["seq"] for d in live] == writes
        assert [d["op"] for d in live] == ["record", "update", "link"]
        assert live[0]["prev"] == backlog[-1]["hash"]
        assert live[1]["payload"] == {"id": a, "changes": {"confidence": 0.9}}
    finally:
        reader.close()


def test_reconnecting_with_last_event_id_gets_exactly_the_missed_events(served: Served) -> None:
    start = served.head
    a = served.record("Use gRPC between services")["id"]
    b = served.record("Use protobuf for the messages")["id"]
    served.churn(b, a, 2)
    first = Reader(served.url, TOKEN, {"after": start})
    seen = check_events(first.take(4), start + 1)
    first.close()
    last = seen[-1]["seq"]
    missed = served.churn(b, a, 4)  # written while no one listens
    assert missed == list(range(last + 1, last + 5))
    # An EventSource reconnects to the URL it was given (after=start) with Last-Event-ID.
    again = Reader(served.url, TOKEN, {"after": start}, last_event_id=last, comments=True)
    try:
        got = check_events(again.take(4), last + 1)
        assert got[0]["prev"] == seen[-1]["hash"]
        time.sleep(2.5)  # two heartbeats' time: nothing else comes, only keep-alives
        rest = [again.received.get_nowait() for _ in range(again.received.qsize())]
        assert rest
        assert all(m.id is None and m.comments == ["keep-alive"] for m in rest)
    finally:
        again.close()


def test_the_stream_needs_the_token_and_good_parameters(served: Served) -> None:
    client = httpx.Client(timeout=10, trust_env=False)
    refused = client.get(f"{served.url}/events", headers=headers(None))
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == "Bearer"
    wrong = client.get(f"{served.url}/events", headers=headers("wrong-token-0123456789"))
    assert wrong.status_code == 401
    head = served.head
    for params, last_id, field in [
        ({"after": head + 5}, None, "after"),
        ({"after": "-1"}, None, "after"),
        ({"after": "soon"}, None, "after"),
        ({}, head + 1, "Last-Event-ID"),
        ({"op": "record,nope"}, None, "op"),
        ({"node": "zz"}, None, "node"),
        ({"project": ""}, None, "project"),
    ]:
        answer = client.get(f"{served.url}/events", params=params, headers=headers(TOKEN, last_id))
        assert answer.status_code == 400, (params, last_id, answer.text)
        assert answer.json()["field"] == field
        assert answer.json()["error"].startswith(f"{field}: ")


def test_filters_match_what_list_events_answers(served: Served) -> None:
    start = served.head
    billing = served.record("Store money as integer cents", project="billing")["id"]
    other = served.record("Render invoices as PDF")["id"]
    served.rpc.ok("cstp.updateDecision", {"id": billing, "updates": {"confidence": 0.8}})
    served.rpc.ok(
        "cstp.linkDecisions", {"sourceId": other, "targetId": billing, "edgeType": "depends_on"}
    )
    served.rpc.ok("cstp.updateDecision", {"id": other, "updates": {"confidence": 0.6}})
    head = served.head
    cases = [
        ({"op": "update"}, {"ops": ["update"]}),
        ({"op": ["update", "link"]}, {"ops": ["update", "link"]}),
        ({"op": "update,link"}, {"ops": ["update", "link"]}),
        ({"node": other}, {"nodeId": other}),
        ({"project": "billing"}, {"project": "billing"}),
        ({"project": "billing", "op": "update"}, {"project": "billing", "ops": ["update"]}),
    ]
    for query, params in cases:
        expected = served.rpc.ok("cstp.listEvents", {**params, "after": start, "limit": 1000})
        wanted = [e["seq"] for e in expected["events"]]
        assert wanted, query
        reader = Reader(served.url, TOKEN, {**query, "after": start})
        try:
            got = [int(m.json()["seq"]) for m in reader.take(len(wanted))]
        finally:
            reader.close()
        assert got == wanted, query
        assert all(s <= head for s in got)
    mine = served.rpc.ok("cstp.listEvents", {"after": start, "nodeId": other})["events"]
    assert [e["seq"] - start for e in mine] == [2, 4, 5]  # its record, the link, its update


def test_a_slow_reader_still_receives_every_event_in_order(served: Served) -> None:
    """The reader's socket has a 4 KiB receive buffer and it stops reading while 2,000 events
    (~1 MB of SSE) are written: the server waits on that one stream, the writer does not, and
    the reader then gets every event, in order."""
    start = served.head
    a = served.record("Batch the nightly exports")["id"]
    b = served.record("Export to Parquet")["id"]
    connection, stream = slow_stream(served.url, TOKEN, f"/events?after={start}")
    try:
        first = [next(stream).json()["seq"] for _ in range(2)]
        assert first == [start + 1, start + 2]
        started = time.monotonic()
        written = served.churn(b, a, 2000)  # while the reader reads nothing
        assert time.monotonic() - started < 120
        time.sleep(1)
        got = [next(stream) for _ in range(2000)]
    finally:
        connection.close()
    documents = check_events(got, start + 3)
    assert [d["seq"] for d in documents] == written
    assert [d["op"] for d in documents] == ["link", "unlink"] * 1000


def test_a_stopping_server_ends_its_streams(tmp_path: Path) -> None:
    proc, url = start_serve(tmp_path / "data", env())
    try:
        reader = Reader(url, TOKEN, {"after": 0})
        Rpc(url, TOKEN).ok("cstp.recordDecision", {"decision": "Log every refund"})
        assert reader.take(1)[0].event == "record"
    finally:
        started = time.monotonic()
        stop_serve(proc)
    assert time.monotonic() - started < 30
    assert proc.returncode == 0
    assert reader.ended.wait(10)
    reader.close()


# -- webhooks --------------------------------------------------------------------------------
def check_deliveries(receiver: Receiver, secret: str) -> list[dict[str, Any]]:
    documents = []
    for delivery in receiver.accepted:
        head, body = delivery["headers"], delivery["body"]
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        assert head["X-Decigraph-Signature"] == f"sha256={expected}"
        document = orjson.loads(body)
        assert head["X-Decigraph-Seq"] == str(document["seq"])
        assert head["X-Decigraph-Event"] == document["op"]
        assert head["Content-Type"] == "application/json"
        documents.append(document)
    for before, after in itertools.pairwise(documents):
        assert after["prev"] == before["hash"]  # consecutive events: nothing skipped
    return documents


def test_webhooks_retry_deliver_in_order_and_resume_after_a_restart(tmp_path: Path) -> None:
    everything, updates = Receiver(fail=2), Receiver()
    config = {
        "agent-a": [
            {"url": everything.url, "secret": SECRET, "id": "everything"},
            {"url": updates.url, "secret": SECRET + "2", "ops": ["update"], "id": "updates"},
        ]
    }
    data = tmp_path / "data"
    server_env = env(DECIGRAPH_WEBHOOKS=json.dumps(config))
    proc, url = start_serve(data, server_env)
    try:
        served = Served(url)
        a = served.record("Use PostgreSQL for the ledger")["id"]
        b = served.record("Use Redis for the session cache")["id"]
        served.rpc.ok("cstp.updateDecision", {"id": a, "updates": {"confidence": 0.9}})
        served.rpc.ok(
            "cstp.linkDecisions", {"sourceId": b, "targetId": a, "edgeType": "depends_on"}
        )
        assert everything.wait_for(4) == [1, 2, 3, 4]
        assert everything.attempts[:3] == [1, 1, 1]  # two 500s, then accepted
        assert [d["op"] for d in check_deliveries(everything, SECRET)] == [
            "record",
            "record",
            "update",
            "link",
        ]
        assert updates.wait_for(1) == [3]
        check_deliveries(updates, SECRET + "2")
    finally:
        stop_serve(proc)
    state = json.loads((data / "webhooks-state.json").read_text())["webhooks"]
    assert state["everything"]["seq"] == 4
    assert state["updates"]["seq"] == 4  # examined up to 4, though only 3 matched
    # Written while the server is down: delivered once it is back.
    with DecisionStore.open(data, StoreOptions(fsync="never")) as store:
        store.record(DecisionDraft(text="Written while the server was down"), "agent-a")
        store.update(a, {"confidence": 0.5}, "agent-a")
    proc, url = start_serve(data, server_env)
    try:
        served = Served(url)
        served.rpc.ok("cstp.updateDecision", {"id": b, "updates": {"confidence": 0.4}})
        assert everything.wait_for(7) == [1, 2, 3, 4, 5, 6, 7]
        assert updates.wait_for(3) == [3, 6, 7]
        documents = check_deliveries(everything, SECRET)
        assert documents[4]["payload"]["node"]["text"] == "Written while the server was down"
        time.sleep(1.5)
        assert everything.seqs() == [1, 2, 3, 4, 5, 6, 7]  # and nothing twice
    finally:
        stop_serve(proc)
        everything.close()
        updates.close()


def test_a_bad_webhook_setting_stops_serve_at_once(tmp_path: Path) -> None:
    config = {"agent-z": [{"url": "http://127.0.0.1:9/x", "secret": SECRET}]}
    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "serve", "--data-dir", str(tmp_path / "d")],
        check=False,
        cwd=ROOT,
        env=env(DECIGRAPH_WEBHOOKS=json.dumps(config)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "'agent-z' is not an agent with a token" in done.stderr
