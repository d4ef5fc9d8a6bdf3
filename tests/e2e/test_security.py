"""Auth over a real socket: every route but /health, /ready and the agent card refuses a bad
token, a token acts only as its own agent, and tokens never show up in answers or logs.

The routes are read from ``create_app(...).routes``, so a route added later is covered (or this
test fails until it is listed as open on purpose).
"""

from __future__ import annotations

import base64
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi.routing import APIRoute
from starlette.routing import Mount, Route

from service.http.app import create_app
from service.http.auth import TokenTable
from service.http.ui import COOKIE
from tests.e2e.test_serve import ROOT, free_port, stop_serve
from tests.support.fakes import fake_app

TOKEN_A = "agent-a-secret-Zq81xK0pV7mW3rT9"
TOKEN_B = "agent-b-secret-Hn52cJ6yL4sD8fG1"
OPEN = {("GET", "/health"), ("GET", "/ready"), ("GET", "/.well-known/agent.json")}
SECRET_TEXT = "Seeded decision nobody without a token may read"
# Values for path parameters, so an authorised request would reach real content.
PATH_VALUES = {"name": "explorer.js"}
SERVE = [sys.executable, "-m", "service.cli", "serve"]


def one_char_off(token: str) -> str:
    return token[:-1] + ("x" if token[-1] != "x" else "y")


BAD_AUTH: dict[str, dict[str, str]] = {
    "no header": {},
    "wrong token": {"Authorization": "Bearer wrong-token-0123456789abcdef"},
    "basic scheme": {
        "Authorization": "Basic " + base64.b64encode(f"agent-a:{TOKEN_A}".encode()).decode()
    },
    "token without scheme": {"Authorization": TOKEN_A},
    # "Bearer " with nothing after it: httpx cannot send trailing blanks, see raw_request
    "bearer only": {"Authorization": "Bearer"},
    "one char off": {"Authorization": f"Bearer {one_char_off(TOKEN_A)}"},
    "prefix of token": {"Authorization": f"Bearer {TOKEN_A[:-1]}"},
    "token plus a char": {"Authorization": f"Bearer {TOKEN_A}x"},
    "two tokens": {"Authorization": f"Bearer {TOKEN_A},{TOKEN_B}"},
}


def app_routes(tmp_path: Path) -> list[tuple[str, str]]:
    """Every (method, path) the application serves, from a real ``create_app`` instance."""
    data = tmp_path / "routes"
    with fake_app(data, seed=1) as app:
        api = create_app(app, TokenTable({TOKEN_A: "agent-a"}))
        routes = []
        for route in api.routes:
            if isinstance(route, Route | Mount) and route.path == "/mcp":
                # The MCP endpoint (an ASGI app answering every method, at /mcp and below).
                routes += [(method, "/mcp") for method in ("DELETE", "GET", "POST")]
                routes += [(method, "/mcp/") for method in ("DELETE", "GET", "POST")]
                continue
            assert isinstance(route, APIRoute), f"unexpected route type {route!r}"
            for method in sorted(route.methods):
                path = re.sub(
                    r"\{(\w+)(:\w+)?\}", lambda m: PATH_VALUES.get(m.group(1), "x"), route.path
                )
                routes.append((method, path))
        return routes


class Live:
    """The server, a client that keeps every answer it got (to look for tokens in them)."""

    def __init__(self, url: str, data: Path, log: Path) -> None:
        self.url = url
        self.data = data
        self.log = log
        self.client = httpx.Client(timeout=60)
        self.seen: list[bytes] = []

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self.client.request(method, f"{self.url}{path}", **kwargs)
        self.seen.append(response.content)
        self.seen.append(str(response.headers).encode())
        return response

    def rpc(self, method: str, params: dict[str, Any], token: str = TOKEN_A) -> Any:
        body = {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
        response = self.request(
            "POST", "/cstp", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 200, response.text
        return response.json()

    def ok(self, method: str, params: dict[str, Any], token: str = TOKEN_A) -> Any:
        answer = self.rpc(method, params, token)
        assert "result" in answer, answer
        return answer["result"]

    def state(self) -> tuple[int, int]:
        health = self.request("GET", "/health").json()
        return health["events"], (self.data / "events.jsonl").stat().st_size


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("security")
    data, log = root / "data", root / "server.log"
    env = {**os.environ, "CSTP_AUTH_TOKENS": f"agent-a:{TOKEN_A},agent-b:{TOKEN_B}"}
    env["DECIGRAPH_FSYNC"] = "never"
    port = free_port()
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [*SERVE, "--data-dir", str(data), "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the server did not start"
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    server = Live(url, data, log)
    try:
        server.ok("cstp.recordDecision", {"decision": SECRET_TEXT})
        yield server
    finally:
        stop_serve(proc)


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    return app_routes(tmp_path_factory.mktemp("routes"))


def test_the_route_list_is_what_we_think(routes: list[tuple[str, str]]) -> None:
    assert set(routes) == {
        ("GET", "/health"),
        ("GET", "/ready"),
        ("GET", "/.well-known/agent.json"),
        ("GET", "/metrics"),
        ("GET", "/graph/export"),
        ("GET", "/events"),
        ("POST", "/cstp"),
        ("GET", "/ui"),
        ("GET", "/ui/explorer.js"),
        ("GET", "/openapi.json"),
        *((method, path) for method in ("DELETE", "GET", "POST") for path in ("/mcp", "/mcp/")),
    }


REFUSAL_BODY = orjson.dumps(
    {"jsonrpc": "2.0", "method": "cstp.recordDecision", "params": {"decision": "sneak"}, "id": 1}
)


def test_every_route_but_health_and_the_card_refuses_a_bad_token(
    live: Live, routes: list[tuple[str, str]]
) -> None:
    before = live.state()
    refused = 0
    for method, path in routes:
        if (method, path) in OPEN:
            continue
        for label, headers in BAD_AUTH.items():
            for query in ({}, {"format": "graphml"}, {"format": "csv", "table": "nodes"}):
                if query and path != "/graph/export":
                    continue
                response = live.request(
                    method, path, params=query, headers=headers, content=REFUSAL_BODY
                )
                where = f"{method} {path} {query} with {label}"
                assert response.status_code == 401, where
                assert response.headers["www-authenticate"] == "Bearer", where
                assert SECRET_TEXT.encode() not in response.content, where
                assert b"recordedBy" not in response.content, where
                assert b"decigraph_rpc" not in response.content, where  # no metrics
                assert b'"paths"' not in response.content, where  # no OpenAPI document
                refused += 1
    assert refused >= 60
    assert live.state() == before  # the write in the refused POST bodies never ran


def raw_request(url: str, method: str, path: str, authorization: bytes) -> bytes:
    """A request written byte by byte (an ``Authorization`` value httpx would not send)."""
    host, port = url.removeprefix("http://").split(":")
    request = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n".encode()
        + b"Authorization: "
        + authorization
        + b"\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(REFUSAL_BODY)}\r\n\r\n".encode()
        + REFUSAL_BODY
    )
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("authorization", [b"Bearer ", b"Bearer   ", b"Bearer \t"])
def test_an_empty_bearer_is_refused_everywhere(
    live: Live, routes: list[tuple[str, str]], authorization: bytes
) -> None:
    before = live.state()
    for method, path in routes:
        if (method, path) in OPEN:
            continue
        answer = raw_request(live.url, method, path, authorization)
        head = answer.split(b"\r\n\r\n", 1)[0].lower()
        assert head.startswith(b"http/1.1 401"), (method, path, answer[:200])
        assert b"www-authenticate: bearer" in head, (method, path)
        assert SECRET_TEXT.encode() not in answer
    assert live.state() == before


def test_the_explorer_cookie_opens_only_the_explorer(
    live: Live, routes: list[tuple[str, str]]
) -> None:
    cookie = {"Cookie": f"{COOKIE}={TOKEN_A}"}
    assert live.request("GET", "/ui/explorer.js", headers=cookie).status_code == 200
    wrong = live.request("GET", "/ui", headers={"Cookie": f"{COOKIE}={one_char_off(TOKEN_A)}"})
    assert wrong.status_code == 401
    assert "not accepted" in wrong.text
    for method, path in routes:
        if (method, path) in OPEN or path.startswith("/ui"):
            continue
        response = live.request(method, path, headers=cookie, content=REFUSAL_BODY)
        assert response.status_code == 401, (method, path)  # never CSRF-able by cookie


def test_open_routes_and_what_a_valid_token_opens(live: Live) -> None:
    assert live.request("GET", "/health").status_code == 200
    ready = live.request("GET", "/ready")  # unauthenticated, and it says nothing secret
    assert ready.status_code in (200, 503)
    assert SECRET_TEXT.encode() not in ready.content
    card = live.request("GET", "/.well-known/agent.json").json()
    assert card["authentication"]["schemes"] == ["bearer"]
    auth = {"Authorization": f"Bearer {TOKEN_B}"}
    assert live.request("GET", "/metrics", headers=auth).status_code == 200
    export = live.request("GET", "/graph/export", params={"format": "d3"}, headers=auth)
    assert SECRET_TEXT in export.text
    document = live.request("GET", "/openapi.json", headers=auth).json()
    assert "/cstp" in document["paths"]
    assert live.request("GET", "/ui", headers=auth).status_code == 200
    for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):  # FastAPI's pages are off
        assert live.request("GET", path, headers=auth).status_code == 404


IMPOSTOR_FIELDS = ["recordedBy", "recorded_by", "actor", "agent", "createdBy", "reviewedBy"]


def test_a_token_acts_only_as_its_own_agent(live: Live) -> None:
    mine = live.ok("cstp.recordDecision", {"decision": "Agent A's decision on caching"})["id"]
    theirs = live.ok(
        "cstp.recordDecision", {"decision": "Agent B's decision on queues"}, token=TOKEN_B
    )["id"]
    before = live.state()
    attempts: list[tuple[str, dict[str, Any]]] = []
    for field in IMPOSTOR_FIELDS:
        attempts += [
            ("cstp.recordDecision", {"decision": "claimed by B", field: "agent-b"}),
            ("cstp.remember", {"text": "claimed by B", field: "agent-b"}),
            ("cstp.updateDecision", {"id": theirs, "updates": {"confidence": 0.5}, field: "b"}),
            ("cstp.reviewDecision", {"id": theirs, "outcome": "success", field: "agent-b"}),
            (
                "cstp.linkDecisions",
                {"sourceId": mine, "targetId": theirs, "edgeType": "relates_to", field: "b"},
            ),
            ("cstp.unlinkDecisions", {"sourceId": mine, "targetId": theirs, field: "agent-b"}),
            ("cstp.preAction", {"action": {"description": "x", field: "agent-b"}}),
            ("cstp.setPreserve", {"id": theirs, field: "agent-b"}),
            ("cstp.recordThought", {"id": theirs, "text": "claimed", field: "agent-b"}),
            ("cstp.resetCircuit", {"scope": "stakes:high", field: "agent-b"}),
            ("cstp.ingestEvidence", {"events": [{"event_type": "pr_opened"}], field: "b"}),
            ("cstp.linkEvidence", {"decision_id": theirs, "event_seqs": [], field: "b"}),
        ]
    attempts.append(("cstp.updateDecision", {"id": theirs, "updates": {"updatedBy": "agent-b"}}))
    for method, params in attempts:
        answer = live.rpc(method, params)
        assert answer["error"]["code"] == -32602, (method, params, answer)
        assert answer["error"]["message"].endswith("is set by the bearer token and cannot be sent")
    assert live.state() == before  # every impostor call was refused before writing

    # The same calls without the claim are recorded under the caller, whoever owns the node.
    made = live.ok("cstp.recordDecision", {"decision": "Recorded with A's token"})["id"]
    memory = live.ok("cstp.remember", {"text": "Remembered with A's token"})["id"]
    live.ok("cstp.updateDecision", {"id": theirs, "updates": {"confidence": 0.6}})
    live.ok("cstp.reviewDecision", {"id": theirs, "outcome": "partial"})
    edge = live.ok(
        "cstp.linkDecisions", {"sourceId": made, "targetId": theirs, "edgeType": "relates_to"}
    )["edge"]
    auto = live.ok(
        "cstp.preAction",
        {
            "action": {"description": "Auto-recorded with A's token"},
            "options": {"autoRecord": True},
        },
    )["decisionId"]
    assert edge["createdBy"] == "agent-a"
    assert live.ok("cstp.getDecision", {"id": made})["decision"]["recordedBy"] == "agent-a"
    assert live.ok("cstp.getDecision", {"id": memory})["decision"]["recordedBy"] == "agent-a"
    assert live.ok("cstp.getDecision", {"id": auto})["decision"]["recordedBy"] == "agent-a"
    other = live.ok("cstp.getDecision", {"id": theirs})["decision"]
    assert other["recordedBy"] == "agent-b"  # still B's record...
    assert other["updatedBy"] == "agent-a"  # ...changed and reviewed by A, and says so
    assert other["reviewedBy"] == "agent-a"
    neighbours = live.ok("cstp.getNeighbors", {"nodeId": theirs})["neighbors"]
    assert {n["edge"]["createdBy"] for n in neighbours if n["node"]["id"] == made} == {"agent-a"}
    live.ok("cstp.unlinkDecisions", {"sourceId": made, "targetId": theirs})

    events = [orjson.loads(line) for line in (live.data / "events.jsonl").read_bytes().splitlines()]
    touched = {made, memory, theirs, auto}
    mine_events = [
        e for e in events if touched & set(re.findall(r"[0-9a-f]{8}", str(e["payload"])))
    ]
    actors = {(e["op"], e["actor"]) for e in mine_events}
    assert ("record", "agent-b") in actors  # B recorded its own decision
    assert {a for op, a in actors if op != "record" or a != "agent-b"} == {"agent-a"}
    assert {op for op, _ in actors} >= {"record", "remember", "update", "review", "link", "unlink"}


def test_a_batch_is_one_agent(live: Live) -> None:
    body = [
        {
            "jsonrpc": "2.0",
            "method": "cstp.recordDecision",
            "params": {"decision": f"b{i}"},
            "id": i,
        }
        for i in range(3)
    ]
    answers = live.request(
        "POST", "/cstp", json=body, headers={"Authorization": f"Bearer {TOKEN_B}"}
    ).json()
    for answer in answers:
        got = live.ok("cstp.getDecision", {"id": answer["result"]["id"]})
        assert got["decision"]["recordedBy"] == "agent-b"


def test_tokens_never_appear_in_answers_logs_or_the_event_log(live: Live) -> None:
    # A few calls that echo input or fail, to give a token every chance to leak.
    live.rpc("cstp.getDecision", {"id": TOKEN_B[:8]})
    live.rpc("cstp.recordDecision", {"decision": "x", "colour": "red"})
    live.request(
        "POST", "/cstp", content=b"{not json", headers={"Authorization": f"Bearer {TOKEN_A}"}
    )
    live.request("GET", "/metrics", headers={"Authorization": f"Bearer {one_char_off(TOKEN_B)}"})
    secrets = [t.encode() for t in (TOKEN_A, TOKEN_B)]
    secrets += [one_char_off(t).encode() for t in (TOKEN_A, TOKEN_B)]
    for content in live.seen:
        for secret in secrets:
            assert secret not in content
    for path in (live.log, live.data / "events.jsonl"):
        text = path.read_bytes()
        for secret in secrets:
            assert secret not in text, path
    assert b"Traceback" not in live.log.read_bytes()


@pytest.mark.parametrize(
    ("header", "agent"),
    [
        (f"Bearer {TOKEN_A}", "agent-a"),
        (f"bearer {TOKEN_A}", "agent-a"),  # the scheme name is case-insensitive (RFC 9110)
        (f"BEARER  {TOKEN_A} ", "agent-a"),
        (f"Bearer{TOKEN_A}", None),
        (f"Token {TOKEN_A}", None),
        ("Bearer ", None),
        ("", None),
        (None, None),
    ],
)
def test_bearer_header_parsing(header: str | None, agent: str | None) -> None:
    assert TokenTable({TOKEN_A: "agent-a"}).agent_for(header) == agent
