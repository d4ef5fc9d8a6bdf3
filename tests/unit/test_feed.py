"""The change feed's pure parts: summaries, the event filter, the hub's wake-ups, webhook
signatures, the retry schedule, the webhook settings and their saved progress."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from graph.drafts import MemoryDraft
from graph.events import Event, Operation
from graph.store import DecisionStore
from service.settings import Settings
from service.usecases.feed import EventFilter, event_filter
from service.usecases.feed_summaries import SUMMARY_MAX, summarize
from service.usecases.feedhub import FeedHub
from service.usecases.webhooks import (
    WebhookConfigError,
    WebhookState,
    backoff,
    load_webhooks,
    parse_webhooks,
    sign,
)
from tests.conftest import decision


def event(op: Operation, payload: dict[str, Any], seq: int = 1) -> Event:
    return Event.create(
        seq=seq,
        event_id=f"{seq:016x}",
        ts="2026-03-01T09:00:00.000000Z",
        actor="agent-a",
        op=op,
        payload=payload,
        prev="0" * 64,
    )


def edge(source: str, target: str, kind: str = "depends_on") -> dict[str, Any]:
    return {"source": source, "target": target, "type": kind}


# -- summaries -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("op", "payload", "expected"),
    [
        (
            Operation.RECORD,
            {"node": {"id": "0000000c", "text": "Use PostgreSQL\nfor the ledger"}, "edges": []},
            "recorded 0000000c: Use PostgreSQL for the ledger",
        ),
        (
            Operation.REMEMBER,
            {"node": {"id": "0000000d", "kind": "fact", "text": "Finance wants cents"}},
            "remembered fact 0000000d: Finance wants cents",
        ),
        (
            Operation.UPDATE,
            {"id": "0000000c", "changes": {"confidence": 0.9, "text": "x" * 40, "stakes": "high"}},
            "updated 0000000c: confidence=0.9, stakes=high, text",
        ),
        (Operation.REVIEW, {"id": "0000000c", "outcome": "success"}, "reviewed 0000000c: success"),
        (
            Operation.SET_LIFECYCLE,
            {"id": "0000000c", "lifecycle": "rejected", "reason": "too costly"},
            "set 0000000c to rejected: too costly",
        ),
        (
            Operation.LINK,
            {"edges": [edge("a", "b"), edge("a", "c")]},
            "linked a depends_on b and 1 more",
        ),
        (
            Operation.SUPERSEDE,
            {"edges": [edge("new", "old", "supersedes")]},
            "new supersedes old",
        ),
        (
            Operation.UNLINK,
            {"source": "a", "target": "b", "type": None},
            "unlinked a -> b (every type)",
        ),
        (Operation.FORGET, {"id": "0000000c"}, "forgot 0000000c"),
        (
            Operation.IMPORT,
            {"nodes": [{"id": "a"}, {"id": "b"}], "edges": [edge("a", "b")]},
            "imported 2 nodes and 1 edges",
        ),
        (
            Operation.EVIDENCE,
            {"kind": "ingest", "records": [{}, {}]},
            "evidence ingest: 2 record(s)",
        ),
        (
            Operation.CIRCUIT,
            {
                "kind": "reset",
                "scope": "stakes:high",
                "previousState": "open",
                "newState": "closed",
            },
            "circuit stakes:high reset: open -> closed",
        ),
    ],
)
def test_each_operation_has_a_readable_summary(
    op: Operation, payload: dict[str, Any], expected: str
) -> None:
    assert summarize(event(op, payload)) == expected


def test_summaries_are_cut_at_160_characters_and_survive_odd_payloads() -> None:
    long = summarize(event(Operation.RECORD, {"node": {"id": "0000000c", "text": "word " * 100}}))
    assert len(long) == SUMMARY_MAX
    assert long.endswith("…")
    assert summarize(event(Operation.RECORD, {"node": "not an object"})) == "recorded : "
    assert summarize(event(Operation.LINK, {"edges": "nope"})) == "linked ? ? ?"
    assert summarize(event(Operation.UPDATE, {"id": 5, "changes": [1]})) == "updated 5: "


# -- the filter ------------------------------------------------------------------------------
def test_the_filter_matches_ops_and_either_end_of_an_edge(store: DecisionStore) -> None:
    a = store.record(decision("Use PostgreSQL"), "t").id
    b = store.record(decision("Use Redis"), "t").id
    store.link(b, a, "depends_on", "t")
    store.update(a, {"confidence": 0.5}, "t")
    events = store.read_events(1, store.seq)
    ops = {e.seq for e in event_filter(["link", "update"]).select(store, events)}
    assert ops == {3, 4}
    by_node = [e.seq for e in EventFilter(node_id=b).select(store, events)]
    assert by_node == [2, 3]  # its record and the link from it
    both = EventFilter(frozenset({Operation.UPDATE}), node_id=a).select(store, events)
    assert [e.seq for e in both] == [4]
    assert EventFilter().everything
    assert EventFilter().select(store, events) == events


def test_the_project_filter_reads_payloads_then_the_graph(store: DecisionStore) -> None:
    billing = store.record(decision("Use PostgreSQL", project="billing"), "t").id
    other = store.record(decision("Use Redis"), "t").id
    store.link(other, billing, "depends_on", "t")  # names a billing node: matches
    store.update(billing, {"confidence": 0.5}, "t")  # billing now, by the graph
    store.update(other, {"project": "billing"}, "t")  # by its payload
    store.remember(MemoryDraft(text="A fact about billing"), "t")  # no project
    gone = store.record(decision("Use Kafka", project="billing"), "t").id
    store.review(gone, "success", "t")
    store.forget(gone, "t")
    events = store.read_events(1, store.seq)
    matched = [e.seq for e in EventFilter(project="billing").select(store, events)]
    # The forgotten node's record matches by its payload; its review and forget name a node
    # the graph no longer holds and carry no project: they do not.
    assert matched == [1, 3, 4, 5, 7]
    assert [e.seq for e in EventFilter(project="infra").select(store, events)] == []


def test_loose_filter_values_are_validated_naming_the_field() -> None:
    import pydantic

    with pytest.raises(pydantic.ValidationError) as bad_op:
        event_filter(["record", "nope"])
    assert bad_op.value.errors()[0]["loc"][0] == "ops"
    with pytest.raises(pydantic.ValidationError) as bad_node:
        event_filter(node_id="not-an-id")
    assert bad_node.value.errors()[0]["loc"][0] == "node_id"
    assert event_filter(project=" billing ").project == "billing"


# -- the hub ---------------------------------------------------------------------------------
def test_a_waiter_wakes_when_a_writer_thread_appends(store: DecisionStore) -> None:
    hub = FeedHub(store)

    async def wait_for_write() -> float:
        waiter = hub.subscribe()
        started = time.monotonic()
        writer = threading.Timer(0.2, lambda: store.record(decision("Written later"), "t"))
        writer.start()
        await waiter.wait(store.seq, hub.generation, 10.0)
        waiter.close()
        writer.join()
        return time.monotonic() - started

    waited = asyncio.run(wait_for_write())
    assert 0.15 < waited < 5.0  # woken by the listener, long before the timeout
    assert hub.waiting == 0

    async def closed() -> float:
        waiter = hub.subscribe()
        started = time.monotonic()
        asyncio.get_running_loop().call_later(0.1, hub.close)
        await waiter.wait(store.seq, hub.generation, 10.0)
        return time.monotonic() - started

    assert asyncio.run(closed()) < 5.0


def test_a_thread_waiter_returns_at_once_when_the_store_is_ahead(store: DecisionStore) -> None:
    hub = FeedHub(store)
    waiter = hub.thread_waiter()
    store.record(decision("Already there"), "t")
    started = time.monotonic()
    waiter.wait(0, 10.0)
    assert time.monotonic() - started < 1.0
    waiter.close()
    assert hub.waiting == 0


# -- webhooks --------------------------------------------------------------------------------
def test_the_signature_is_the_hex_hmac_sha256_of_the_body() -> None:
    # RFC 4231, test case 2.
    assert sign("Jefe", b"what do ya want for nothing?") == (
        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    )
    body = b'{"seq":1}'
    expected = hmac.new(b"s" * 16, body, hashlib.sha256).hexdigest()
    assert sign("s" * 16, body) == f"sha256={expected}"


def test_retries_back_off_from_half_a_second_doubling_to_a_minute() -> None:
    assert [backoff(n) for n in range(1, 10)] == [0.5, 1, 2, 4, 8, 16, 32, 60, 60]
    assert backoff(10_000) == 60


SECRET = "s3cret-s3cret-s3cret"


def test_webhook_settings_are_checked_entry_by_entry() -> None:
    good = {"agent-a": [{"url": "http://127.0.0.1:9/h", "secret": SECRET, "ops": ["record"]}]}
    (hook,) = parse_webhooks(json.dumps(good), "test", {"agent-a"})
    assert hook.key == "agent-a http://127.0.0.1:9/h"
    assert hook.filter.ops == frozenset({Operation.RECORD})
    problems = {
        "not JSON": "{",
        "is not an agent with a token": json.dumps({"agent-b": good["agent-a"]}),
        "must be a list": json.dumps({"agent-a": {"url": "x"}}),
        "agent-a[0].url": json.dumps({"agent-a": [{"url": "ftp://x.example/", "secret": SECRET}]}),
        "agent-a[0].secret": json.dumps({"agent-a": [{"url": "http://x.example/", "secret": "s"}]}),
        "agent-a[0].ops.0": json.dumps(
            {"agent-a": [{"url": "http://x.example/", "secret": SECRET, "ops": ["nope"]}]}
        ),
        "agent-a[0].colour": json.dumps(
            {"agent-a": [{"url": "http://x.example/", "secret": SECRET, "colour": "red"}]}
        ),
        "configured twice": json.dumps({"agent-a": good["agent-a"] * 2}),
    }
    for words, text in problems.items():
        with pytest.raises(WebhookConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
            parse_webhooks(text, "test", {"agent-a"})
    two = {"agent-a": [{**good["agent-a"][0], "id": "one"}, {**good["agent-a"][0], "id": "two"}]}
    assert [h.key for h in parse_webhooks(json.dumps(two), "test", None)] == ["one", "two"]


def test_webhooks_come_from_the_setting_or_the_data_directory(tmp_path: Path) -> None:
    document = {"agent-a": [{"url": "https://hooks.example/x?token=t", "secret": SECRET}]}
    assert load_webhooks(Settings(data_dir=tmp_path)) == []
    (tmp_path / "webhooks.json").write_text(json.dumps(document))
    (hook,) = load_webhooks(Settings(data_dir=tmp_path))
    assert hook.label == "agent-a https://hooks.example/x"  # no query string in the logs
    inline = Settings(data_dir=tmp_path / "elsewhere", webhooks=json.dumps(document))
    assert len(load_webhooks(inline)) == 1
    missing = Settings(data_dir=tmp_path, webhooks=str(tmp_path / "missing.json"))
    with pytest.raises(WebhookConfigError, match=r"missing\.json"):
        load_webhooks(missing)


def test_progress_is_saved_atomically_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "webhooks-state.json"
    state = WebhookState(path)
    assert state.get("a") is None
    state.save("a", 7, "h7")
    state.save("b", 3, "h3")
    assert WebhookState(path).get("a") == (7, "h7")
    assert WebhookState(path).get("b") == (3, "h3")
    assert [p.name for p in tmp_path.iterdir()] == ["webhooks-state.json"]  # no temporary left
    path.write_text("{torn")
    assert WebhookState(path).get("a") is None  # unreadable: as if new (and said in the log)
