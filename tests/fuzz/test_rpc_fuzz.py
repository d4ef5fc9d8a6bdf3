"""Property-based fuzzing of every JSON-RPC method's params: never an internal error.

In-process, with the deterministic fakes for the model and ChromaDB (the dispatcher and the
handlers are what is under test; ``test_rpc_e2e.py`` covers the real parts over a socket), plus
a smaller sample of raw bodies sent over a real socket to the same app under uvicorn.

Every call asserts: no -32603, no traceback, a params error (-32602) names its field in
``data.field``, and a refused call changes nothing (log size, sequence, graph hash).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.drafts import DecisionDraft
from graph.enums import EdgeType
from graph.store import DecisionStore
from service.http.app import create_app
from service.http.auth import TokenTable
from service.methods import build_registry
from service.rpc.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallContext,
    Dispatcher,
    RpcError,
    parse_body,
)
from service.usecases import Decigraph
from tests.support.fakes import fake_app
from tests.support.fuzz_values import FIELD_NAMES, json_values


@dataclass
class Fuzzed:
    """The dispatcher under fuzz, the store behind it and a few ids that exist."""

    rpc: Dispatcher
    ids: list[str]
    store: DecisionStore
    app: Decigraph

    def state(self) -> tuple[int, str, int]:
        log = self.app.settings.data_dir / "events.jsonl"
        return self.store.seq, self.store.graph_hash(), log.stat().st_size

    def call(self, request: Any, agent: str = "fuzz") -> Any:
        """Dispatch ``request``; check the invariants every answer must keep."""
        before = self.state()
        answer = self.rpc.handle(request, CallContext(agent))
        check_answer(answer, request, refused_changes_nothing=(before, self.state()))
        return answer


def check_answer(
    answer: Any, request: Any, refused_changes_nothing: tuple[Any, Any] | None = None
) -> None:
    answers = answer if isinstance(answer, list) else [answer]
    for one in answers:
        if one is None or "error" not in one:
            continue
        error = one["error"]
        assert error["code"] != INTERNAL_ERROR, (request, one)
        assert "Traceback" not in error["message"], one
        if error["code"] == INVALID_PARAMS:
            assert error.get("data", {}).get("field"), (request, one)
    refused = all(one is not None and "error" in one for one in answers)
    if refused_changes_nothing is not None and answer is not None and refused:
        before, after = refused_changes_nothing
        assert before == after, ("a refused call changed the store", request, answer)


#: A statement the fake judge reads as contradicting two seeds: confidently the first, which two
#: others rely on (a block), and plausibly the second (a review), so fuzzed writes, checks and
#: resolutions (supersedes, compatibleWith, override) go through both tiers.
RIVAL = "fuzz rival of the seeds"


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    data = tmp_path_factory.mktemp("fuzz") / "data"
    with fake_app(data, seed=2) as app:
        store = app.store
        ids = [store.record(DecisionDraft(text=f"seed decision {i}"), "t").id for i in range(4)]
        for i in range(2):
            dependent = store.record(DecisionDraft(text=f"seed dependent {i}"), "t").id
            store.link(dependent, ids[0], EdgeType.DEPENDS_ON, "t")
        app.pair_judge.set("seed decision 0", RIVAL, 0.99)  # type: ignore[attr-defined]
        app.pair_judge.set("seed decision 1", RIVAL, 0.8)  # type: ignore[attr-defined]
        yield Fuzzed(Dispatcher(build_registry(app)), ids, store, app)


#: Params naming decisions by a list of ids (the guardrail's resolutions).
ID_LISTS = ("supersedes", "compatibleWith", "contradicts")


def with_known_values(raw: dict[str, Any], data: st.DataObject, ids: list[str]) -> None:
    """Now and then put ids that exist, and the statement the judge raises, where ``raw``
    has such a param (an action's too), so the gate's paths run, not only validation."""
    for key in ("id", "sourceId", "targetId", "nodeId"):
        if key in raw and data.draw(st.booleans()):
            raw[key] = data.draw(st.sampled_from(ids))
    for key in ID_LISTS:
        if key in raw and data.draw(st.booleans()):
            raw[key] = data.draw(st.lists(st.sampled_from(ids), max_size=3))
    for key in ("decision", "description", "text"):
        if key in raw and data.draw(st.booleans()):
            raw[key] = RIVAL
    action = raw.get("action")
    if "action" in raw and data.draw(st.booleans()):
        action = raw["action"] = {"description": RIVAL}
    if isinstance(action, dict):
        for key in ID_LISTS:
            if data.draw(st.integers(0, 3)) == 0:
                action[key] = data.draw(st.lists(st.sampled_from(ids), max_size=2))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
@pytest.mark.parametrize(
    "method",
    [
        "cstp.recordDecision",
        "cstp.getDecision",
        "cstp.queryDecisions",
        "cstp.updateDecision",
        "cstp.reviewDecision",
        "cstp.linkDecisions",
        "cstp.unlinkDecisions",
        "cstp.remember",
        "cstp.recall",
        "cstp.getGraph",
        "cstp.getNeighbors",
        "cstp.findPath",
        "cstp.getAncestors",
        "cstp.getDescendants",
        "cstp.findContradictions",
        "cstp.getBlockedChain",
        "cstp.computeSalience",
        "cstp.getHighSalience",
        "cstp.listDecisions",
        "cstp.getStats",
        "cstp.checkGuardrails",
        "cstp.listGuardrails",
        "cstp.preAction",
        "cstp.ready",
        "cstp.getSessionContext",
        "cstp.getCalibration",
        "cstp.checkDrift",
        "cstp.getReasonStats",
        "cstp.attributeOutcomes",
        "cstp.reindex",
        "cstp.recordThought",
        "cstp.debugTracker",
        "cstp.compact",
        "cstp.getCompacted",
        "cstp.setPreserve",
        "cstp.getWisdom",
        "cstp.listBreakers",
        "cstp.getCircuitState",
        "cstp.resetCircuit",
        "cstp.ingestEvidence",
        "cstp.linkEvidence",
        "cstp.mapControls",
        "cstp.exportEvidenceBundle",
        "cstp.verifyEvidenceChain",
        "cstp.getReplicaStatus",
        "cstp.getEvent",
        "cstp.listEvents",
        "cstp.getDecisionHistory",
        "cstp.setLifecycle",  # last: these two may reject or forget the seeded decisions
        "cstp.forget",
    ],
)
def test_no_params_cause_an_internal_error(
    fuzzed: Fuzzed, method: str, data: st.DataObject
) -> None:
    rpc, ids = fuzzed.rpc, fuzzed.ids
    spec = rpc.registry.get(method)
    assert spec is not None
    own = sorted(f.alias or name for name, f in spec.params.model_fields.items())
    # Mostly the method's own parameters (so validation passes often and handlers run).
    keys = (
        st.sampled_from(own)
        if own and data.draw(st.integers(0, 3))
        else st.sampled_from(FIELD_NAMES)
    )
    raw: dict[str, Any] = data.draw(st.dictionaries(keys, json_values, max_size=6))
    with_known_values(raw, data, ids)
    answer = fuzzed.call({"jsonrpc": "2.0", "method": method, "params": raw, "id": 1})
    assert answer is not None


def test_every_registered_method_is_fuzzed(fuzzed: Fuzzed) -> None:
    rpc = fuzzed.rpc
    source = Path(__file__).read_text()
    assert all(f'"{name}"' in source for name in rpc.registry.names())


def _write_request(fuzzed: Fuzzed, request_id: Any) -> dict[str, Any]:
    params = {"decision": f"id probe {request_id!r}"}
    return {"jsonrpc": "2.0", "method": "cstp.recordDecision", "params": params, "id": request_id}


@pytest.mark.parametrize("request_id", [[], [1], {}, {"id": 1}, True, False])
def test_a_request_id_of_the_wrong_type_is_refused_before_anything_runs(
    fuzzed: Fuzzed, request_id: Any
) -> None:
    before = fuzzed.state()
    answer = fuzzed.call(_write_request(fuzzed, request_id))
    assert answer["error"]["code"] == -32600
    assert answer["id"] is None
    assert fuzzed.state() == before  # the (valid) write in it did not happen


@pytest.mark.parametrize("request_id", [7, -7, 0, 2**63 - 1, 1.5, "", "\u202eid", None])
def test_request_ids_json_rpc_allows_are_echoed(fuzzed: Fuzzed, request_id: Any) -> None:
    answer = fuzzed.call(_write_request(fuzzed, request_id))
    assert "result" in answer, answer
    assert answer["id"] == request_id


def _params_of(rpc: Dispatcher, method: str) -> list[str]:
    spec = rpc.registry.get(method)
    assert spec is not None
    return sorted(f.alias or name for name, f in spec.params.model_fields.items())


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def test_huge_strings_in_every_param_are_refused_or_harmless(fuzzed: Fuzzed) -> None:
    """Just under the 1 MB body limit: a field with a maximum length answers -32602 naming it;
    a write never stores such a string; a lookup by a huge id finds nothing."""
    huge = "\u00e9" * 450_000 + "x" * 90_000  # about 990 kB of UTF-8
    for method in fuzzed.rpc.registry.names():
        spec = fuzzed.rpc.registry.get(method)
        assert spec is not None
        for field in _params_of(fuzzed.rpc, method):
            before = fuzzed.state()
            answer = fuzzed.call({"jsonrpc": "2.0", "method": method, "params": {field: huge}})
            assert answer is None  # a notification: nothing to answer, and nothing may break
            if spec.writes:
                assert fuzzed.state() == before, (method, field)
            answer = fuzzed.call(
                {"jsonrpc": "2.0", "method": method, "params": {field: huge}, "id": 1}
            )
            if spec.writes:
                assert fuzzed.state() == before, (method, field)
                assert answer["error"]["code"] == INVALID_PARAMS, (method, field)


def test_the_decision_text_limit_names_the_field(fuzzed: Fuzzed) -> None:
    answer = fuzzed.call(
        {
            "jsonrpc": "2.0",
            "method": "cstp.recordDecision",
            "params": {"decision": "x" * 990_000},
            "id": 1,
        }
    )
    assert answer["error"]["code"] == INVALID_PARAMS
    assert answer["error"]["data"]["field"] == "decision"
    assert "10000 characters" in answer["error"]["message"]


def test_deeply_nested_params_never_overflow_the_stack(fuzzed: Fuzzed) -> None:
    """10,000 levels in any param of any method (in-process, where no parser limits depth)."""
    deep = _nested(10_000)
    for method in fuzzed.rpc.registry.names():
        for field in _params_of(fuzzed.rpc, method):
            fuzzed.call({"jsonrpc": "2.0", "method": method, "params": {field: deep}, "id": 1})
        fuzzed.call({"jsonrpc": "2.0", "method": method, "params": deep, "id": 1})
    with pytest.raises(RpcError) as raised:
        parse_body(_envelope("cstp.recall", b"[" * 10_000 + b"]" * 10_000))
    assert raised.value.code == -32700


@pytest.mark.parametrize(
    ("literal", "code"),
    [
        (b"NaN", -32700),
        (b"Infinity", -32700),
        (b"-Infinity", -32700),
        (b"1e400", -32700),
        (b'"\\ud800"', -32700),
        (b"-0", None),
    ],
)
def test_non_json_numbers_and_lone_surrogates_are_parse_errors(
    literal: bytes, code: int | None
) -> None:
    body = b'{"jsonrpc":"2.0","method":"cstp.recall","params":{"query":"x","limit":' + literal
    if code is None:
        assert parse_body(body + b'},"id":1}')["params"]["limit"] == 0
        return
    with pytest.raises(RpcError) as raised:
        parse_body(body + b'},"id":1}')
    assert raised.value.code == code


# --- over a real socket: raw bytes to the same app under uvicorn ---------------------------

TOKEN = "socket-fuzz-token-0123456789"
LIMIT = 1_000_000


@dataclass
class Live:
    url: str
    fuzzed: Fuzzed
    client: httpx.Client


@pytest.fixture(scope="module")
def live(fuzzed: Fuzzed) -> Iterator[Live]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    api = create_app(fuzzed.app, TokenTable({TOKEN: "socket-fuzz"}))
    server = uvicorn.Server(
        uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    with httpx.Client(timeout=60) as client:
        yield Live(f"http://127.0.0.1:{port}", fuzzed, client)
    server.should_exit = True
    thread.join(timeout=30)


def _envelope(method: str, params: bytes, request_id: bytes = b"1") -> bytes:
    return (
        b'{"jsonrpc":"2.0","method":"'
        + method.encode()
        + b'","params":'
        + params
        + b',"id":'
        + request_id
        + b"}"
    )


def _dumps(value: Any) -> bytes:
    """Standard JSON text, integers of any size included (the server sees ``2**70`` as it is
    sent); lone surrogates become ``\\udxxx`` escapes."""
    return json.dumps(value).encode()


METHODS = [
    "cstp.recordDecision",
    "cstp.remember",
    "cstp.updateDecision",
    "cstp.linkDecisions",
    "cstp.recall",
    "cstp.listDecisions",
    "cstp.getGraph",
    "cstp.checkGuardrails",
    "cstp.preAction",
    "cstp.getSessionContext",
]
LITERALS = [b"NaN", b"Infinity", b"-Infinity", b"1e999", b'"\\ud800"', b'"\\udfff\\ud800"']
raw_bodies = st.one_of(
    # a JSON literal that is not JSON (NaN, Infinity, lone surrogates) inside the params
    st.builds(
        lambda m, f, lit: _envelope(m, b'{"' + f.encode() + b'":' + lit + b"}"),
        st.sampled_from(METHODS),
        st.sampled_from(FIELD_NAMES),
        st.sampled_from(LITERALS),
    ),
    # nested far past the parser's depth limit
    st.builds(
        lambda m, depth: _envelope(m, b"[" * depth + b"]" * depth),
        st.sampled_from(METHODS),
        st.integers(1_000, 12_000),
    ),
    # well-formed JSON of any shape, with nasty values, for every method
    st.builds(
        lambda m, params, rid: _envelope(m, _dumps(params), _dumps(rid)),
        st.sampled_from(METHODS),
        st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=5),
        st.one_of(st.integers(-5, 5), st.text(max_size=5), st.none(), st.booleans()),
    ),
    # invalid UTF-8, truncated documents, arbitrary bytes
    st.binary(max_size=200),
    st.builds(
        lambda m, cut: _envelope(m, b'{"query":"x"}')[:cut],
        st.sampled_from(METHODS),
        st.integers(0, 60),
    ),
    st.sampled_from(
        [
            b'{"jsonrpc":"2.0","method":"cstp.recordDecision","params":{"decision":"\xff\xfe"},"id":1}',
            b"\xef\xbb\xbf{}",
            b"null",
            b"[[]]",
            b"[" + b",".join([b'{"jsonrpc":"2.0","method":"cstp.getStats","id":1}'] * 101) + b"]",
        ]
    ),
)


def _check_http(live: Live, body: bytes, before: tuple[int, str, int]) -> httpx.Response:
    response = live.client.post(
        f"{live.url}/cstp",
        content=body,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    assert response.status_code in (200, 204, 413), (body[:200], response.text[:300])
    assert b"Traceback" not in response.content
    if response.status_code == 204:
        return response
    document = response.json()
    check_answer(document, body[:200], (before, live.fuzzed.state()))
    if response.status_code == 413:
        assert live.fuzzed.state() == before
    return response


@settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=raw_bodies)
def test_raw_bodies_over_a_socket(live: Live, body: bytes) -> None:
    _check_http(live, body, live.fuzzed.state())


def test_size_limit_over_a_socket(live: Live) -> None:
    """1 MB and more is 413 before parsing; just under it, the field's own limit answers."""
    before = live.fuzzed.state()
    over = _envelope("cstp.recordDecision", b'{"decision":"' + b"x" * LIMIT + b'"}')
    assert _check_http(live, over, before).status_code == 413
    under = _envelope("cstp.recordDecision", b'{"decision":"' + b"x" * (LIMIT - 200) + b'"}')
    answer = _check_http(live, under, before).json()
    assert answer["error"]["data"]["field"] == "decision"
    assert live.fuzzed.state() == before


# --- regressions: inputs that used to end in -32603 or an HTTP 500 ---------------------------


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        # OverflowError converting to UTC (past year 9999 / before year 1)
        ("cstp.remember", {"text": "t", "occurredAt": "9999-12-31T23:59:59-14:00"}, "occurredAt"),
        ("cstp.listDecisions", {"dateFrom": "0001-01-01T00:00:00+14:00"}, "dateFrom"),
        (
            "cstp.recall",
            {"query": "q", "filters": {"dateAfter": "0001-01-01T00:00:00+14:00"}},
            "filters.dateAfter",
        ),
        (
            "cstp.queryDecisions",
            {"query": "q", "filters": {"dateBefore": "9999-12-31T23:59:59-14:00"}},
            "filters.dateBefore",
        ),
        # a year below 1000 was stored as "999-..." and broke reading it back
        ("cstp.remember", {"text": "t", "occurredAt": "0999-06-01"}, "occurredAt"),
        # created_at + 9999 years overflowed
        ("cstp.recordDecision", {"decision": "d", "reviewIn": "9999y"}, "reviewIn"),
        # a float that is a valid int past 64 bits, echoed back, broke the JSON encoder
        ("cstp.listDecisions", {"offset": 1e30}, "offset"),
    ],
)
def test_out_of_range_dates_and_numbers_name_the_field(
    fuzzed: Fuzzed, method: str, params: dict[str, Any], field: str
) -> None:
    before = fuzzed.state()
    answer = fuzzed.call({"jsonrpc": "2.0", "method": method, "params": params, "id": 1})
    assert answer["error"]["code"] == INVALID_PARAMS, answer
    assert answer["error"]["data"]["field"] == field
    assert fuzzed.state() == before


def test_a_huge_integer_over_the_socket_is_a_params_error_not_a_500(live: Live) -> None:
    body = _envelope("cstp.listDecisions", b'{"offset": 1e30}')
    answer = _check_http(live, body, live.fuzzed.state()).json()
    assert answer["error"]["data"]["field"] == "offset"


def test_params_nested_a_thousand_deep_are_refused_naming_the_field(live: Live) -> None:
    """orjson accepts 1,024 levels; validating them overflowed Python's stack (RecursionError)."""
    deep = b"[" * 1_000 + b"]" * 1_000
    body = _envelope("cstp.findPath", b'{"sourceId":"a","targetId":"b","edgeTypes":' + deep + b"}")
    answer = _check_http(live, body, live.fuzzed.state()).json()
    assert answer["error"]["code"] == INVALID_PARAMS
    assert answer["error"]["data"]["field"] == "edgeTypes"
