"""Strict wire types and exact request ids.

A value whose coercion would change its meaning is refused with ``-32602`` naming the field
(``confidence: true`` is not 100% sure, ``autoRecord: "yes"`` is not a boolean, ``limit: "5"`` is
a string); an integer stays a valid number where a float is wanted. Request ids come back as
sent, integers beyond 64 bits included.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from service.cli.jsonl import LineError, parse_line
from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher, encode_response, parse_body
from service.usecases import Decigraph
from tests.support.fakes import fake_app


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def call(app: Decigraph, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer: dict[str, Any] = Dispatcher(build_registry(app)).handle(request, CallContext("a"))
    return answer


REFUSED = [
    ("recordDecision", {"decision": "x", "confidence": True}, "confidence"),
    ("recordDecision", {"decision": "x", "confidence": "0.8"}, "confidence"),
    (
        "recordDecision",
        {"decision": "x", "reasons": [{"type": "analysis", "text": "t", "strength": "1"}]},
        "reasons.0.strength",
    ),
    ("preAction", {"action": {"description": "x"}, "options": {"autoRecord": "yes"}}, "options"),
    ("preAction", {"action": {"description": "x"}, "options": {"autoRecord": 1}}, "options"),
    ("preAction", {"action": {"description": "x", "confidence": False}}, "action.confidence"),
    ("checkGuardrails", {"action": {"description": "x", "confidence": "high"}}, "action"),
    ("queryDecisions", {"query": "x", "limit": "5"}, "limit"),
    ("queryDecisions", {"query": "x", "limit": True}, "limit"),
    ("queryDecisions", {"query": "x", "limit": 5.5}, "limit"),
    ("queryDecisions", {"query": "x", "hybridWeight": "0.5"}, "hybridWeight"),
    ("queryDecisions", {"query": "x", "includeReasons": "false"}, "includeReasons"),
    ("queryDecisions", {"query": "x", "filters": {"minConfidence": True}}, "filters"),
    ("recall", {"query": "x", "limit": "3"}, "limit"),
    ("listDecisions", {"includeSuperseded": "false"}, "includeSuperseded"),
    ("listDecisions", {"offset": "10"}, "offset"),
    ("getGraph", {"nodeId": "0000aaaa", "depth": "2"}, "depth"),
    ("findPath", {"sourceId": "0000aaaa", "targetId": "0000bbbb", "directed": 1}, "directed"),
    ("updateDecision", {"id": "0000aaaa", "updates": {"confidence": True}}, "updates"),
    ("ready", {"limit": "10"}, "limit"),
]


@pytest.mark.parametrize(("method", "params", "field"), REFUSED)
def test_coercions_that_change_meaning_are_refused_naming_the_field(
    app: Decigraph, method: str, params: dict[str, Any], field: str
) -> None:
    before = app.store.seq
    answer = call(app, method, params)
    assert "error" in answer, answer
    error = answer["error"]
    assert error["code"] == -32602, error
    assert error["data"]["field"].startswith(field), error
    assert app.store.seq == before


def test_integers_are_numbers_where_a_float_is_wanted(app: Decigraph) -> None:
    made = call(app, "recordDecision", {"decision": "Use Postgres", "confidence": 1})["result"]
    stored = call(app, "getDecision", {"id": made["id"]})["result"]["decision"]
    assert stored["confidence"] == 1.0
    answer = call(app, "queryDecisions", {"query": "postgres", "hybridWeight": 0, "limit": 5})
    assert "result" in answer, answer
    strong = {"decision": "x", "reasons": [{"type": "analysis", "text": "t", "strength": 1}]}
    assert "result" in call(app, "checkGuardrails", {"action": strong})


def test_strings_still_name_enum_members_and_dates(app: Decigraph) -> None:
    made = call(
        app,
        "recordDecision",
        {"decision": "Adopt Terraform", "category": "tooling", "stakes": "high", "reviewIn": "2w"},
    )
    assert "result" in made, made
    listed = call(app, "listDecisions", {"dateFrom": "2020-01-01", "stakes": "high"})["result"]
    assert listed["total"] == 1


def test_import_lines_are_as_strict_as_the_method() -> None:
    with pytest.raises(LineError, match=r"^confidence: "):
        parse_line('{"decision": "Use Kafka", "confidence": true}')
    with pytest.raises(LineError, match=r"^confidence: "):
        parse_line('{"decision": "Use Kafka", "confidence": "0.9"}')
    assert parse_line('{"decision": "Use Kafka", "confidence": 1}').confidence == 1.0  # type: ignore[union-attr]


BIG_IDS = [
    b"9007199254740993",
    b"12345678901234567890",
    b"123456789012345678901234567890",
    b"-9223372036854775809",
    b"-123456789012345678901234567890",
    b"18446744073709551616",
]


@pytest.mark.parametrize("literal", BIG_IDS)
def test_integer_ids_of_any_size_are_echoed_exactly(app: Decigraph, literal: bytes) -> None:
    body = b'{"jsonrpc":"2.0","method":"cstp.getStats","id":' + literal + b"}"
    payload = parse_body(body)
    assert payload["id"] == int(literal)
    assert isinstance(payload["id"], int)
    answer = Dispatcher(build_registry(app)).handle(payload, CallContext("a"))
    encoded = encode_response(answer)
    assert encoded.endswith(b'"id":' + literal + b"}")
    assert "result" in orjson.loads(encoded)


def test_batches_keep_every_id(app: Decigraph) -> None:
    body = (
        b'[{"jsonrpc":"2.0","method":"cstp.getStats","id":123456789012345678901234567890},'
        b'{"jsonrpc":"2.0","method":"cstp.nope","id":-99999999999999999999},'
        b'{"jsonrpc":"2.0","method":"cstp.getStats","id":1.5},'
        b'{"jsonrpc":"2.0","method":"cstp.getStats","id":"7"},'
        b'{"jsonrpc":"2.0","method":"cstp.getStats","id":null},'
        b'{"jsonrpc":"2.0","method":"cstp.getStats"}]'
    )
    answer = Dispatcher(build_registry(app)).handle(parse_body(body), CallContext("a"))
    encoded = encode_response(answer)
    assert b'"id":123456789012345678901234567890}' in encoded
    assert b'"id":-99999999999999999999}' in encoded
    ids = [
        one["id"]
        for one in orjson.loads(
            encoded.replace(b"123456789012345678901234567890", b"1").replace(
                b"-99999999999999999999", b"2"
            )
        )
    ]
    assert ids == [1, 2, 1.5, "7", None]  # the notification gets no answer
