"""Fault injection against the real server (``decigraph serve``, real model, real ChromaDB).

* kill -9 in the middle of concurrent writes from several clients, restart, repeat: every
  acknowledged write is present exactly once with its fields and edges, an in-flight one is
  either wholly present or absent, recall finds acknowledged items, ``verify --indexes`` passes;
* a full disk: writes fail with a storage error and change nothing, reads keep working, and
  writes work again once space is freed, without a restart;
* a torn last log line (partial JSON, a line cut inside a UTF-8 character): the server starts,
  moves the tail aside, serves every earlier write and chains new ones onto the last good event.

The longer runs of the kill -9 loop and of the torn tails are in ``tests/soak/test_faults.py``.
"""

from __future__ import annotations

import errno
import itertools
import os
import random
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from graph.store import DecisionStore, StoreOptions
from tests.support.diskfaults import Disk, RlimitDisk, TmpfsDisk
from tests.support.loadgen import (
    AGENTS,
    Client,
    Served,
    read_log,
    server_env,
    verify,
    write_artifact,
)

STORAGE_FAILED = -32010
BLOCKED = -32004
TOPICS = [
    "billing ledger storage",
    "session cache layout",
    "search index sharding",
    "payment retry policy",
    "mobile release train",
    "data warehouse partitions",
    "checkout queue sizing",
    "platform log retention",
]
WORDS = ["amber", "basil", "cedar", "dune", "ember", "fjord", "garnet", "heron", "iris", "kelp"]


def statement(rng: random.Random, client: int, number: int) -> str:
    """A generated decision text (one template: the judge may read two as rival choices)."""
    topic = rng.choice(TOPICS)
    return f"Decision {number} from client {client} on the {topic} ({rng.choice(WORDS)} {number})"


# -- kill -9 under concurrent writes -------------------------------------------------------------


@dataclass
class Op:
    """One write as a client saw it: acknowledged (with the result) or in flight at the kill."""

    kind: str
    client: int
    agent: str
    params: dict[str, Any]
    key: tuple[Any, ...]
    order: int
    acked: bool = False
    result: dict[str, Any] | None = None


@dataclass
class ClientState:
    """What one client knows it wrote, carried from one server life to the next."""

    number: int
    decisions: list[str] = field(default_factory=list)  # acknowledged, in recording order
    linked: set[tuple[str, str]] = field(default_factory=set)
    reviewed: set[str] = field(default_factory=set)
    counter: int = 0


class Ledger:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.acks = 0

    def begin(self, op: Op) -> None:
        with self.lock:
            op.order = len(self.ops)
            self.ops.append(op)

    def ack(self, op: Op, result: dict[str, Any]) -> None:
        with self.lock:
            op.acked, op.result = True, result
            self.acks += 1


def writer(url: str, state: ClientState, life: int, ledger: Ledger, stop: threading.Event) -> None:
    """Write until the server dies (a transport error) or ``stop`` is set."""
    rng = random.Random(1000 * life + state.number)
    agent = f"agent-{state.number % len(AGENTS)}"
    client = Client(url, agent, timeout=30)
    try:
        while not stop.is_set():
            op = next_op(rng, state, life, agent)
            ledger.begin(op)
            try:
                answer = client.call(op.kind, op.params)
                if answer.get("error", {}).get("code") == BLOCKED and op.kind == "recordDecision":
                    # The generated texts share one template, which the judge may read as rival
                    # choices once a decision is relied on: resolve it as an agent would.
                    op.params["override"] = {"reason": "fault-injection test"}
                    answer = client.call(op.kind, op.params)
            except httpx.TransportError:
                return  # the server is gone: this op stays in flight
            except AssertionError as exc:  # not HTTP 200 with JSON
                ledger.errors.append(f"{op.kind}: {exc}")
                return
            if "error" in answer:
                ledger.errors.append(f"{op.kind} {op.params}: {answer['error']}")
                return
            ledger.ack(op, answer["result"])
            remember_ack(state, op)
    finally:
        client.close()


def next_op(rng: random.Random, state: ClientState, life: int, agent: str) -> Op:
    state.counter += 1
    n, own = state.counter, state.decisions
    roll = rng.random()
    if len(own) < 2 or roll < 0.35:
        node_id = f"{life:02x}{state.number:02x}{n:04x}"
        params: dict[str, Any] = {
            "id": node_id,
            "decision": statement(rng, state.number, n),
            "confidence": round(rng.uniform(0.1, 0.9), 6),
            "category": rng.choice(["architecture", "process", "tooling"]),
            "tags": [f"client-{state.number}"],
        }
        if own and rng.random() < 0.4:  # a decision recorded together with an edge
            params["contradicts"] = [rng.choice(own)]
            params["override"] = {"reason": "fault-injection test"}
        return Op("recordDecision", state.number, agent, params, ("record", node_id), 0)
    if roll < 0.55:
        external = f"m-{life}-{state.number}-{n}"
        params = {
            "text": f"Observation {n} from client {state.number} about the {rng.choice(TOPICS)}",
            "source": f"client-{state.number}",
            "externalId": external,
        }
        return Op("remember", state.number, agent, params, ("remember", external), 0)
    pairs = [(own[j], own[i]) for j in range(1, len(own)) for i in range(j)]
    fresh = [p for p in pairs if p not in state.linked]
    if roll < 0.75 and fresh:
        source, target = rng.choice(fresh)
        state.linked.add((source, target))  # attempted: never again, acknowledged or not
        params = {"sourceId": source, "targetId": target, "edgeType": "depends_on"}
        return Op("linkDecisions", state.number, agent, params, ("link", source, target), 0)
    pending = [d for d in own if d not in state.reviewed]
    if roll < 0.87 and pending:
        node_id = rng.choice(pending)
        state.reviewed.add(node_id)
        outcome = rng.choice(["success", "partial", "failure"])
        params = {"id": node_id, "outcome": outcome, "lessons": f"lesson {n}"}
        return Op("reviewDecision", state.number, agent, params, ("review", node_id, outcome), 0)
    node_id = rng.choice(own)
    value = round(rng.uniform(0.1, 0.9), 6)
    params = {"id": node_id, "updates": {"confidence": value}}
    return Op("updateDecision", state.number, agent, params, ("update", node_id, value), 0)


def remember_ack(state: ClientState, op: Op) -> None:
    # Only acknowledged decisions are built on (linked, reviewed, updated) later.
    if op.kind == "recordDecision":
        state.decisions.append(op.params["id"])


def log_keys(data: Path) -> Counter[tuple[Any, ...]]:
    """The identity of every write in the log, as :class:`Op` keys."""
    keys: Counter[tuple[Any, ...]] = Counter()
    for event in read_log(data / "events.jsonl"):
        payload, op = event["payload"], event["op"]
        if op == "record":
            keys["record", payload["node"]["id"]] += 1
        elif op == "remember":
            keys["remember", payload["node"]["external_id"]] += 1
        elif op == "link":
            for edge in payload["edges"]:
                keys["link", edge["source"], edge["target"]] += 1
        elif op == "review":
            keys["review", payload["id"], payload["outcome"]] += 1
        elif op == "update":
            keys["update", payload["id"], payload["changes"]["confidence"]] += 1
        else:
            keys[op, event["seq"]] += 1  # nothing else is written: fails the check below
    return keys


def check_after_restart(data: Path, ledger: Ledger, served: Served) -> dict[str, int]:
    """Every acknowledged write exactly once; in-flight ones all or nothing; nothing else."""
    acked = [op for op in ledger.ops if op.acked]
    inflight = [op for op in ledger.ops if not op.acked]
    keys = log_keys(data)
    for op in acked:
        assert keys[op.key] == 1, (op.key, keys[op.key])
    allowed = {op.key for op in ledger.ops}
    strangers = [key for key in keys if key not in allowed]
    assert not strangers, strangers
    assert all(keys[op.key] <= 1 for op in inflight)

    store = DecisionStore.open(data, StoreOptions(read_only=True))
    try:
        G = store.graph
        confidence: dict[str, set[float]] = {}  # what each node's confidence may now be
        for op in ledger.ops:
            present = keys[op.key] == 1
            if op.kind == "recordDecision":
                node_id = op.params["id"]
                assert (node_id in G) == present, (op.key, present)
                if present:
                    node = store.get(node_id)
                    assert node.text == op.params["decision"]
                    assert node.tags == op.params["tags"]
                    assert node.recorded_by == op.agent
                    for target in op.params.get("contradicts", []):
                        assert G.has_edge(node_id, target, "contradicts"), (op.key, target)
                    confidence[node_id] = {op.params["confidence"]}
            elif op.kind == "remember":
                found = store.find_external(op.params["externalId"])
                assert (found is not None) == present, op.key
                if op.acked:
                    assert op.result is not None
                    assert found == op.result["id"]
                    for edge in op.result["edges"]:
                        target, kind = edge["targetId"], edge["edgeType"]
                        assert G.has_edge(found, target, kind) or G.has_edge(target, found, kind)
            elif op.kind == "linkDecisions":
                source, target = op.params["sourceId"], op.params["targetId"]
                assert G.has_edge(source, target, "depends_on") == present, op.key
            elif op.kind == "reviewDecision":
                node = store.get(op.params["id"])
                if present:
                    assert node.outcome == op.params["outcome"]
                    assert node.lessons == op.params["lessons"]
                else:
                    assert node.outcome is None, op.key
            elif op.kind == "updateDecision" and present:
                # Each client updates only its own decisions, one call at a time, so the
                # latest present update wins.
                confidence[op.params["id"]] = {op.params["updates"]["confidence"]}
        for node_id, values in confidence.items():
            assert store.get(node_id).confidence in values, node_id
        # An event is applied whole: every edge any logged write carried is in the graph.
        for event in read_log(data / "events.jsonl"):
            edges = event["payload"].get("edges", [])
            for edge in edges:
                assert G.has_edge(edge["source"], edge["target"], edge["type"]), event["seq"]
        counts = {
            "acked": len(acked),
            "inflight": len(inflight),
            "inflightApplied": sum(keys[op.key] for op in inflight),
            "events": store.seq,
        }
    finally:
        store.close()

    # The restarted server serves them, and recall finds acknowledged decisions.
    client = Client(served.url)
    try:
        decisions = [op for op in acked if op.kind == "recordDecision"]
        for op in decisions:
            got = client.ok("getDecision", {"id": op.params["id"]})
            assert got["found"] is True, op.key
        for op in random.Random(len(acked)).sample(decisions, min(5, len(decisions))):
            hits = client.ok("recall", {"query": op.params["decision"], "limit": 10})
            assert op.params["id"] in [hit["id"] for hit in hits["results"]], op.key
    finally:
        client.close()
    return counts


@pytest.mark.parametrize("kills", [pytest.param(2, id="2-kills")])
def test_kill_9_during_concurrent_writes(tmp_path: Path, kills: int, reaper: list[Served]) -> None:
    kill_9_during_concurrent_writes(tmp_path, kills, reaper)


def kill_9_during_concurrent_writes(tmp_path: Path, kills: int, reaper: list[Served]) -> None:
    """``kills`` lives of six writing clients, each ended by SIGKILL (12 in ``make soak``)."""
    data = tmp_path / "data"
    env = server_env(PYTHONFAULTHANDLER="1")
    served = Served(data, env, tmp_path / "serve-0.log")
    reaper.append(served)
    ledger = Ledger()
    states = [ClientState(number) for number in range(6)]
    rng = random.Random(kills)
    lives: list[dict[str, Any]] = []
    for life in range(kills):
        stop = threading.Event()
        threads = [
            threading.Thread(target=writer, args=(served.url, state, life, ledger, stop))
            for state in states
        ]
        for thread in threads:
            thread.start()
        target = ledger.acks + rng.randint(20, 70)
        deadline = time.monotonic() + 60
        while ledger.acks < target and time.monotonic() < deadline and not ledger.errors:
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.05))  # land anywhere in a request
        served.kill()
        for thread in threads:
            thread.join(timeout=60)
        assert not ledger.errors, ledger.errors
        assert ledger.acks >= target, "the writers stalled"
        served = Served(data, env, tmp_path / f"serve-{life + 1}.log")
        reaper.append(served)
        counts = check_after_restart(data, ledger, served)
        lives.append({"kill": life + 1, "recoverSeconds": round(served.start_seconds, 2), **counts})
    served.stop()
    report = verify(data)
    assert report["events"] == lives[-1]["events"]
    write_artifact(f"faults-kill9-{kills}.json", {"kills": lives})
    print(f"kill -9 x{kills}:", lives)


# -- a full disk ---------------------------------------------------------------------------------


@pytest.fixture(params=["tmpfs-enospc", "rlimit-efbig"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Disk]:
    data = tmp_path / "data"
    made: Disk
    if request.param == "tmpfs-enospc":
        if shutil.which("unshare") is None or shutil.which("nsenter") is None:
            pytest.skip("unshare/nsenter (util-linux) are not installed")
        try:
            made = TmpfsDisk(data)
        except OSError as exc:
            pytest.skip(f"no real ENOSPC here ({exc}); the rlimit-efbig variant still runs")
    else:
        made = RlimitDisk(data)
    try:
        yield made
    finally:
        made.close()


def assert_storage_error(answer: dict[str, Any], disk: Disk) -> None:
    assert "error" in answer, answer
    error = answer["error"]
    assert error["code"] == STORAGE_FAILED, error
    assert error["data"] == {"retryable": True, "errno": disk.errno}, error
    assert "nothing was written" in error["message"]
    cause = "disk full" if disk.errno == "ENOSPC" else os.strerror(errno.EFBIG)
    assert cause in error["message"], error


def test_full_disk_fails_writes_cleanly_and_keeps_reads(
    tmp_path: Path, disk: Disk, reaper: list[Served]
) -> None:
    data = tmp_path / "data"
    # A snapshot after every event: a write that reaches the log while the snapshot cannot be
    # written must still be acknowledged (it is durable), not reported as failed.
    env = server_env(DECIGRAPH_SNAPSHOT_EVERY="1", PYTHONFAULTHANDLER="1")
    served = Served(data, env, tmp_path / "serve.log", disk.prefix, disk.preexec)
    reaper.append(served)
    disk.attach(served)
    files = disk.path(data)
    client = Client(served.url, timeout=30)
    rng = random.Random(5)
    texts: dict[str, str] = {}
    refused: list[str] = []
    events = 0

    def record(node_id: str, text: str) -> dict[str, Any]:
        nonlocal events
        answer = client.call("recordDecision", {"id": node_id, "decision": text})
        if "result" in answer:
            texts[node_id], events = text, events + 1
        return answer

    for n in range(4):
        assert "result" in record(f"a000{n:04x}", statement(rng, 0, n))
    client.ok("recall", {"query": "session cache layout"})  # flushes ChromaDB
    for n in range(4, 8):  # these stay queued for ChromaDB until the next vector query
        assert "result" in record(f"a000{n:04x}", statement(rng, 0, n))
    first = next(iter(texts))
    client.ok("updateDecision", {"id": first, "updates": {"confidence": 0.5}})
    events += 1
    size_before = (files / "events.jsonl").stat().st_size

    disk.fill()
    # tmpfs still takes what fits in the log's last page: such writes are acknowledged and
    # durable. Keep writing small events until one is refused; from then on all must be.
    refusal = None
    for n in range(40):
        answer = client.call("updateDecision", {"id": first, "updates": {"confidence": n / 100}})
        if "error" in answer:
            refusal = answer
            break
        events += 1
    assert refusal is not None, "the disk never filled up"
    assert_storage_error(refusal, disk)
    size_full = (files / "events.jsonl").stat().st_size
    a, b = sorted(texts)[:2]
    version = client.ok("getDecision", {"id": a})["decision"]["version"]
    for method, params in [
        ("recordDecision", {"id": "bad00001", "decision": statement(rng, 1, 1) + " " * 50}),
        ("remember", {"text": "An observation while the disk is full", "externalId": "full"}),
        ("linkDecisions", {"sourceId": b, "targetId": a, "edgeType": "depends_on"}),
        ("reviewDecision", {"id": a, "outcome": "success", "lessons": "x" * 200}),
        ("updateDecision", {"id": a, "updates": {"confidence": 0.99}, "expectedVersion": version}),
    ]:
        assert_storage_error(client.call(method, params), disk)
        refused.append(method)
    refused_ids = ["bad00001"]
    # Nothing was half-applied: the log did not grow, every line is whole.
    assert (files / "events.jsonl").stat().st_size == size_full
    assert len(read_log(files / "events.jsonl")) == events
    assert (files / "events.jsonl").read_bytes().endswith(b"\n")

    # Reads keep working, including vector search with queued ChromaDB writes it cannot take.
    for node_id in texts:
        assert client.ok("getDecision", {"id": node_id})["found"] is True
    assert client.ok("getDecision", {"id": "bad00001"})["found"] is False
    assert client.ok("listDecisions", {"limit": 100})["total"] == len(texts)
    queued = f"a000{7:04x}"
    hits = client.ok("recall", {"query": texts[queued], "limit": 5})
    assert queued in [hit["id"] for hit in hits["results"]]
    found = client.ok("queryDecisions", {"query": texts[queued], "retrievalMode": "semantic"})
    assert found["decisions"][0]["id"] == queued
    assert served.health()["events"] == events

    # Space comes back: writes work again at once, no restart.
    disk.free()
    text = statement(rng, 2, 1)
    assert "result" in record("c0000001", text)
    client.ok("remember", {"text": "The disk has space again", "externalId": "freed"})
    events += 1
    # The embedded ChromaDB failed a write: this process no longer writes to it (its next write
    # can block after the I/O error) and answers vector queries from the in-memory matrix.
    hits = client.ok("recall", {"query": text, "limit": 5})
    assert "c0000001" in [hit["id"] for hit in hits["results"]]
    client.close()
    served.stop()
    assert served.proc.returncode == 0, served.log_tail()
    assert not list(files.glob("events.jsonl.torn-*"))
    verify(data, indexes=False, prefix=disk.prefix)
    # A restart catches ChromaDB up from the log; then the indexes agree with it.
    again = Served(data, env, tmp_path / "serve-again.log", disk.prefix, disk.preexec)
    reaper.append(again)
    disk.attach(again)
    fresh = Client(again.url, timeout=60)
    hits = fresh.ok("recall", {"query": text, "limit": 5})
    assert "c0000001" in [hit["id"] for hit in hits["results"]]
    fresh.close()
    again.stop()
    assert again.proc.returncode == 0, again.log_tail()
    report = verify(data, prefix=disk.prefix)
    assert report["events"] == events
    with DecisionStore.open(files, StoreOptions(read_only=True)) as store:
        for node_id, text in texts.items():
            assert store.get(node_id).text == text
        assert all(node_id not in store.graph for node_id in refused_ids)
        assert store.find_external("full") is None
        assert not store.graph.has_edge(b, a, "depends_on")
    write_artifact(
        f"faults-disk-{disk.name}.json",
        {
            "method": disk.name,
            "errno": disk.errno,
            "logBytesBeforeFill": size_before,
            "acknowledgedWhileFilling": events - len(texts) - 2,
            "refused": ["updateDecision", *refused],
            "events": events,
        },
    )


# -- a torn last line ----------------------------------------------------------------------------


def tear_partial_json(log: Path) -> bytes:
    last = log.read_bytes().splitlines()[-1]
    return last[: len(last) // 2]  # a write cut short: half a line, no newline


def tear_mid_utf8(log: Path) -> bytes:
    # The last line holding a non-ASCII character (a decision's text), cut inside it.
    last = next(line for line in reversed(log.read_bytes().splitlines()) if not line.isascii())
    at = last.index("é".encode())
    return last[: at + 1]


# Only bytes after the last newline are torn. A newline-terminated bad line (even half an
# event cut inside a UTF-8 character, then a newline) is a changed acknowledged line: the store
# refuses to open, naming it (tests/integration/test_eventlog.py), so it is no tear here.
TEARS = {
    "partial-json": tear_partial_json,
    "mid-utf8": tear_mid_utf8,
}


@pytest.mark.parametrize("names", [pytest.param(["partial-json", "mid-utf8"], id="2-tears")])
def test_torn_last_line_is_moved_aside(tmp_path: Path, names: list[str]) -> None:
    torn_last_line_is_moved_aside(tmp_path, names)


def torn_last_line_is_moved_aside(tmp_path: Path, names: list[str]) -> None:
    """Life 0 records; each later life starts on a freshly torn tail, checks, links, stops.

    Links need no embedding model, so the lives in between stay fast; the last one also
    recalls and records (a new decision chains onto the last good event).
    """
    data = tmp_path / "data"
    env = server_env(PYTHONFAULTHANDLER="1")
    log = data / "events.jsonl"
    texts: dict[str, str] = {}
    rng = random.Random(9)
    lives: list[dict[str, Any]] = []
    events = 0
    tears: list[str | None] = [None, *names]
    for life, name in enumerate(tears):
        size = log.stat().st_size if log.exists() else 0
        tail = b""
        if name is not None:
            tail = TEARS[name](log)
            with log.open("ab") as handle:
                handle.write(tail)
            verify(data, indexes=False)  # a reader stops before a torn tail
        served = Served(data, env, tmp_path / f"serve-{life}.log")
        client = Client(served.url)
        try:
            if name is not None:  # moved aside, byte for byte, and cut from the log
                assert (data / f"events.jsonl.torn-{size}").read_bytes() == tail, name
                assert log.stat().st_size == size
            assert served.health()["events"] == events
            for node_id, text in texts.items():
                got = client.ok("getDecision", {"id": node_id})
                assert got["decision"]["decision"] == text
            if life == 0 or life == len(tears) - 1:
                for n in range(len(tears) if life == 0 else 1):
                    node_id = f"e{life:03x}{n:04x}"
                    text = f"Café décision {life}.{n} über das {rng.choice(TOPICS)} — 日本"
                    client.ok("recordDecision", {"id": node_id, "decision": text})
                    texts[node_id], events = text, events + 1
                hits = client.ok("recall", {"query": text, "limit": 5})
                assert node_id in [hit["id"] for hit in hits["results"]]
            else:  # a write right after the cut: it must chain onto the last good event
                ids = list(texts)
                link = {"sourceId": ids[life], "targetId": ids[life - 1], "edgeType": "refines"}
                assert client.ok("linkDecisions", link)["created"] is True
                events += 1
            assert served.health()["events"] == events
        finally:
            client.close()
            served.stop()
        lives.append({"tear": name, "tornBytes": len(tail), "startSeconds": served.start_seconds})
    report = verify(data)
    assert report["events"] == events
    chain = read_log(log)
    assert [event["seq"] for event in chain] == list(range(1, events + 1))
    assert all(e["prev"] == p["hash"] for p, e in itertools.pairwise(chain))
    assert len(list(data.glob("events.jsonl.torn-*"))) == len(names)
    write_artifact(f"faults-torn-{len(names)}.json", {"lives": lives})
