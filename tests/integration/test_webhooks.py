"""Webhook delivery against a real store and a real local HTTP endpoint (in-process app, the
hash embedder for the model): where a new webhook starts, a log that no longer holds what was
delivered, and stopping in the middle of retries."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph.drafts import DecisionDraft
from service.composition import open_app
from service.settings import Settings
from service.usecases.context import Decigraph
from service.usecases.webhooks import STATE_NAME, WebhookDispatcher, parse_webhooks
from tests.support.fakes import HashEmbedder
from tests.support.receiver import Receiver

SECRET = "integration-secret-0123456789"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.close()


def opened(data: Path) -> Decigraph:
    return open_app(Settings(data_dir=data, fsync="never"), HashEmbedder())


def record(app: Decigraph, text: str) -> None:
    app.store.record(DecisionDraft(text=text), "agent-a")


def dispatcher(app: Decigraph, url: str, **entry: Any) -> WebhookDispatcher:
    config = {"agent-a": [{"url": url, "secret": SECRET, "id": "hook", **entry}]}
    return WebhookDispatcher(app, parse_webhooks(json.dumps(config), "test")).start()


def state(data: Path) -> dict[str, Any]:
    entries: dict[str, Any] = json.loads((data / STATE_NAME).read_text())["webhooks"]
    return entries


def test_a_new_webhook_starts_at_the_head_unless_told_where(
    tmp_path: Path, receiver: Receiver
) -> None:
    app = opened(tmp_path / "data")
    try:
        for n in range(3):
            record(app, f"Before the webhook {n}")
        hooks = dispatcher(app, receiver.url)
        time.sleep(0.5)
        record(app, "After the webhook")
        assert receiver.wait_for(1, timeout=30) == [4]
        hooks.stop()
        assert state(tmp_path / "data")["hook"]["seq"] == 4
    finally:
        app.close()
    other = Receiver()
    app = opened(tmp_path / "other")
    try:
        for n in range(3):
            record(app, f"Before the webhook {n}")
        hooks = dispatcher(app, other.url, after=1)
        assert other.wait_for(2, timeout=30) == [2, 3]
        hooks.stop()
    finally:
        app.close()
        other.close()


def test_a_log_that_lost_what_was_delivered_is_announced_as_a_reset(
    tmp_path: Path, receiver: Receiver
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # Progress saved against another history: seq 9, a hash this log never had.
    saved = {"version": 1, "webhooks": {"hook": {"seq": 9, "hash": "f" * 64}}}
    (data / STATE_NAME).write_text(json.dumps(saved))
    app = opened(data)
    try:
        for n in range(3):
            record(app, f"Decision {n}")
        hooks = dispatcher(app, receiver.url)
        receiver.wait_for(1, timeout=30)
        record(app, "After the reset")
        assert receiver.wait_for(2, timeout=30) == [3, 4]
        notice = receiver.accepted[0]
        assert notice["headers"]["X-Decigraph-Event"] == "reset"
        assert orjson.loads(notice["body"]) == {
            "event": "reset",
            "head": 3,
            "resumeAfter": 3,
            "previousSeq": 9,
        }
        event = orjson.loads(receiver.accepted[1]["body"])
        assert event["seq"] == 4
        assert event["payload"]["node"]["text"] == "After the reset"
        hooks.stop()
        assert state(data)["hook"] == {"seq": 4, "hash": event["hash"]}
    finally:
        app.close()


def test_stopping_ends_the_retries_at_once_and_keeps_the_place(tmp_path: Path) -> None:
    failing = Receiver(fail=10**6)
    app = opened(tmp_path / "data")
    try:
        hooks = dispatcher(app, failing.url, after=0)
        record(app, "Never accepted")
        deadline = time.monotonic() + 30
        while len(failing.attempts) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert failing.attempts[:3] == [1, 1, 1]  # retried, nothing after it sent
        worker = hooks.workers[0]
        assert worker.failures >= 3
        assert worker.last_error == "HTTP 500"
        started = time.monotonic()
        hooks.stop()
        assert time.monotonic() - started < 5  # not waiting out the backoff
        assert state(tmp_path / "data")["hook"]["seq"] == 0  # seq 1 still to deliver
    finally:
        app.close()
        failing.close()
