"""Webhooks: the change feed POSTed to URLs, in seq order, at least once.

Configured per agent (a token's name, as ``CSTP_AUTH_TOKENS`` or the token file gives it):
``DECIGRAPH_WEBHOOKS`` holds a JSON object, or the path of a JSON file; unset,
``<data-dir>/webhooks.json`` is read when it exists::

    {"agent-a": [{"url": "https://ci.example/decigraph", "secret": "16+ characters",
                  "ops": ["record", "update"], "project": "billing"}]}

Each entry: ``url`` (http or https), ``secret`` (16+ characters), and optionally ``ops``,
``project``, ``node`` (the filters of ``GET /events``), ``id`` (the name its progress is kept
under; default ``"<agent> <url>"``; two entries of one agent with one URL need one each),
``timeout`` (seconds per POST, default 10) and ``after`` (where a webhook seen for the first
time starts: a seq; default the head at that moment, i.e. the events from then on).

Delivery: each webhook has a thread of its own that reads the log after the last seq it
delivered and POSTs each matching event, one at a time, in seq order: the body is the event's
canonical JSON line (as ``GET /events`` sends it), with ``X-Decigraph-Seq``,
``X-Decigraph-Event`` (the operation) and ``X-Decigraph-Signature: sha256=<hex>`` (HMAC-SHA256
of the raw body with the secret). A 2xx answer is a delivery; anything else (an error status,
a redirect, a timeout, a refused connection) is retried after 0.5 s, doubling up to 60 s
between attempts, forever: a webhook that is down holds its own place in the log and nothing
after it is sent before it (nothing is dropped, and other webhooks go on). The last delivered
seq (and its hash) of each webhook is kept in ``<data-dir>/webhooks-state.json`` (written
atomically, at most every :data:`SAVE_EVERY` s and when the server stops), so a restart resumes
where delivery stood, reading from the log: events appended while the server was down are
delivered too. After a crash the events delivered since the last save are sent again: at
least once; receivers drop duplicates by seq.

If the log no longer holds the event a webhook last delivered (a log restored from an older
backup, a shared log that diverged), the webhook receives ``X-Decigraph-Event: reset`` with
``{"event": "reset", "head": ..., "resumeAfter": ..., "previousSeq": ...}`` and delivery goes
on after ``resumeAfter``: the receiver should re-read what it keeps (``cstp.listEvents``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import orjson
import pydantic
from pydantic import Field, field_validator

from graph.errors import DecigraphError, EventStoreError
from graph.events import Event, Operation
from graph.model import ShortText
from service.settings import Settings

from .context import Decigraph
from .feed import BATCH, EventFilter, event_json
from .feedhub import ThreadWaiter
from .inputs import Input, NodeId

logger = logging.getLogger(__name__)

CONFIG_NAME = "webhooks.json"
STATE_NAME = "webhooks-state.json"
FIRST_RETRY = 0.5
MAX_RETRY = 60.0
#: Seconds between saves of a webhook's progress while it delivers.
SAVE_EVERY = 1.0
#: A waiting worker looks at the store's seq at least this often (seconds).
POLL = 1.0


class WebhookConfigError(DecigraphError):
    """The webhook settings cannot be used (the message names the entry and the field)."""


class WebhookSpec(Input):
    """One configured webhook (see the module docstring)."""

    url: str = Field(min_length=8, max_length=2048)
    secret: str = Field(min_length=16, max_length=1024)
    ops: list[Operation] | None = Field(default=None, min_length=1)
    project: ShortText | None = Field(default=None, min_length=1)
    node: NodeId | None = None
    id: str | None = Field(default=None, min_length=1, max_length=200)
    timeout: float = Field(default=10.0, gt=0, le=300)
    after: int | None = Field(default=None, ge=0)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        url = httpx.URL(value)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("must be an http:// or https:// URL")
        return value


@dataclass(frozen=True)
class Webhook:
    agent: str
    spec: WebhookSpec

    @property
    def key(self) -> str:
        """The name its progress is kept under."""
        return self.spec.id or f"{self.agent} {self.spec.url}"

    @property
    def label(self) -> str:
        """How logs name it (without the URL's query, which may hold a credential)."""
        url = httpx.URL(self.spec.url)
        return self.spec.id or f"{self.agent} {url.scheme}://{url.netloc.decode()}{url.path}"

    @property
    def filter(self) -> EventFilter:
        ops = None if self.spec.ops is None else frozenset(self.spec.ops)
        return EventFilter(ops, self.spec.node, self.spec.project)


def parse_webhooks(text: str, origin: str, agents: set[str] | None = None) -> list[Webhook]:
    """The webhooks of a JSON document ``{agent: [entry, ...]}``; ``agents``: the agents that
    have a token (``None``: any name, as with ``--no-auth``)."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise WebhookConfigError(f"{origin}: not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise WebhookConfigError(f"{origin}: must be an object mapping agents to webhook lists")
    hooks: list[Webhook] = []
    for agent, entries in document.items():
        if agents is not None and agent not in agents:
            known = ", ".join(sorted(agents)) or "none"
            raise WebhookConfigError(f"{origin}: {agent!r} is not an agent with a token ({known})")
        if not isinstance(entries, list):
            raise WebhookConfigError(f"{origin}: {agent}: must be a list of webhooks")
        for number, entry in enumerate(entries):
            where = f"{origin}: {agent}[{number}]"
            try:
                spec = WebhookSpec.model_validate(entry)
            except pydantic.ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                name = ".".join(str(p) for p in first.get("loc", ())) or "entry"
                raise WebhookConfigError(f"{where}.{name}: {first.get('msg')}") from None
            hooks.append(Webhook(agent, spec))
    keys = [hook.key for hook in hooks]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise WebhookConfigError(f"{origin}: {twice[0]!r} is configured twice: give each an id")
    return hooks


def load_webhooks(settings: Settings, agents: set[str] | None = None) -> list[Webhook]:
    """The configured webhooks (``settings.webhooks``: JSON text or a file; unset, the data
    directory's ``webhooks.json`` if any); none configured: ``[]``."""
    value = (settings.webhooks or "").strip()
    if value.startswith("{"):
        return parse_webhooks(value, "DECIGRAPH_WEBHOOKS", agents)
    path = Path(value) if value else Path(settings.data_dir) / CONFIG_NAME
    if not value and not path.exists():
        return []
    try:
        text = path.read_text()
    except OSError as exc:
        raise WebhookConfigError(f"{path}: {exc.strerror or exc}") from None
    return parse_webhooks(text, str(path), agents)


def sign(secret: str, body: bytes) -> str:
    """``X-Decigraph-Signature``: ``sha256=`` and the hex HMAC-SHA256 of ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def backoff(attempt: int, first: float = FIRST_RETRY, cap: float = MAX_RETRY) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1, 2, ...): 0.5, 1, 2, ... 60."""
    return min(cap, first * 2.0 ** min(attempt - 1, 32))


class WebhookState:
    """Each webhook's last delivered seq and that event's hash, in one JSON file replaced
    atomically (a temporary file, fsync, rename)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = {}
        try:
            document = json.loads(path.read_text())
            self._entries = dict(document.get("webhooks", {}))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError) as exc:
            logger.warning("%s unreadable (%s): webhooks start as if new", path, exc)

    def get(self, key: str) -> tuple[int, str] | None:
        entry = self._entries.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("seq"), int):
            return None
        return int(entry["seq"]), str(entry.get("hash", ""))

    def save(self, key: str, seq: int, event_hash: str) -> None:
        with self._lock:
            self._entries[key] = {"seq": seq, "hash": event_hash}
            document = {"version": 1, "webhooks": self._entries}
            body = orjson.dumps(document, option=orjson.OPT_INDENT_2)
            handle, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(body + b"\n")
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise


@dataclass
class Worker:
    """One webhook's delivery thread (see the module docstring)."""

    app: Decigraph
    hook: Webhook
    state: WebhookState
    stopping: threading.Event
    delivered: int = 0
    last_hash: str = ""
    attempts: int = 0
    failures: int = 0
    last_error: str | None = None
    _saved: tuple[int, float] = field(default=(-1, 0.0))
    _waiter: ThreadWaiter | None = None
    _client: httpx.Client | None = None

    def run(self) -> None:
        waiter = self._waiter = self.app.feed.thread_waiter()
        self._client = httpx.Client(timeout=self.hook.spec.timeout, trust_env=False)
        try:
            self._start()
            generation = self.app.feed.generation
            while not self.stopping.is_set():
                if self.app.feed.generation != generation:
                    generation = self.app.feed.generation
                    self._check_position()
                elif self.app.store.seq <= self.delivered:
                    self._save()
                    waiter.wait(self.delivered, POLL)
                else:
                    self._deliver_batch()
        except Exception:  # a bug or a corrupt log: say so; the server goes on
            logger.exception("webhook %s stopped", self.hook.label)
        finally:
            waiter.close()
            self._client.close()
            self._save()

    def wake(self) -> None:
        if self._waiter is not None:
            self._waiter.wake()

    def _deliver_batch(self) -> None:
        """The next events after the last delivered: each matching one POSTed, in order."""
        store = self.app.store
        try:
            events = store.read_events(self.delivered + 1, store.seq, BATCH)
            matched = {e.seq for e in self.hook.filter.select(store, events)}
        except EventStoreError as exc:  # a shared log out of reach: try again shortly
            logger.warning("webhook %s: the log cannot be read (%s)", self.hook.label, exc)
            self.stopping.wait(POLL)
            return
        for event in events:
            if event.seq in matched and not self._post_event(event):
                return  # stopping
            self.delivered, self.last_hash = event.seq, event.hash
            if time.monotonic() - self._saved[1] >= SAVE_EVERY:
                self._save()

    def _start(self) -> None:
        known = self.state.get(self.hook.key)
        if known is None:  # new: from the configured seq, else from now on
            after = self.hook.spec.after
            start = self.app.store.seq if after is None else min(after, self.app.store.seq)
            self.delivered, self.last_hash = start, self._hash_at(start) or ""
            self._save(force=True)
            return
        self.delivered, self.last_hash = known
        self._check_position()

    def _hash_at(self, seq: int) -> str | None:
        if seq == 0:
            return ""
        found = self.app.store.read_events(seq, seq)
        return found[0].hash if found else None

    def _check_position(self) -> None:
        """Does the log still hold the event last delivered? If not, say so to the receiver
        and go on from what the log holds."""
        if self._hash_at(self.delivered) == self.last_hash:
            return
        head = self.app.store.seq
        resume = min(self.delivered, head)
        notice = {"event": "reset", "head": head, "resumeAfter": resume}
        logger.warning("webhook %s: the log no longer holds event %s", self.hook.label, resume)
        body = orjson.dumps({**notice, "previousSeq": self.delivered})
        if self._post(body, resume, "reset"):
            self.delivered, self.last_hash = resume, self._hash_at(resume) or ""
            self._save(force=True)

    def _post_event(self, event: Event) -> bool:
        return self._post(event_json(event), event.seq, event.op.value)

    def _post(self, body: bytes, seq: int, kind: str) -> bool:
        """POST until a 2xx answer (True) or until stopping (False)."""
        spec = self.hook.spec
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"decigraph/{version('decigraph')}",
            "X-Decigraph-Seq": str(seq),
            "X-Decigraph-Event": kind,
            "X-Decigraph-Signature": sign(spec.secret, body),
        }
        client = self._client
        assert client is not None  # set by run()
        attempt = 0
        while not self.stopping.is_set():
            attempt += 1
            self.attempts += 1
            try:
                answer = client.post(spec.url, content=body, headers=headers)
                if 200 <= answer.status_code < 300:
                    self.last_error = None
                    return True
                problem = f"HTTP {answer.status_code}"
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            self.failures += 1
            self.last_error = problem
            delay = backoff(attempt)
            logger.warning(
                "webhook %s: seq %s not delivered (%s); attempt %d, next in %.1f s",
                self.hook.label,
                seq,
                problem,
                attempt,
                delay,
            )
            if self.stopping.wait(delay):
                break
        return False

    def _save(self, force: bool = False) -> None:
        if not force and self._saved[0] == self.delivered:
            return
        try:
            self.state.save(self.hook.key, self.delivered, self.last_hash)
        except OSError as exc:  # a full disk: delivery goes on; a restart re-sends (at least once)
            logger.warning("webhook %s: progress not saved (%s)", self.hook.label, exc)
        self._saved = (self.delivered, time.monotonic())


class WebhookDispatcher:
    """Every configured webhook's worker thread, started and stopped together."""

    def __init__(self, app: Decigraph, hooks: list[Webhook]) -> None:
        self.stopping = threading.Event()
        state = WebhookState(app.settings.data_dir / STATE_NAME)
        self.workers = [Worker(app, hook, state, self.stopping) for hook in hooks]
        self._threads: list[threading.Thread] = []

    def start(self) -> WebhookDispatcher:
        for worker in self.workers:
            name = f"decigraph-webhook-{worker.hook.label}"[:60]
            thread = threading.Thread(target=worker.run, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        """Stop delivering (a POST under way may finish within its timeout) and save where
        each webhook stands."""
        self.stopping.set()
        for worker in self.workers:
            worker.wake()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()


def start_webhooks(app: Decigraph, hooks: list[Webhook]) -> WebhookDispatcher | None:
    """Deliver ``hooks`` (``None`` when there are none)."""
    return WebhookDispatcher(app, hooks).start() if hooks else None
