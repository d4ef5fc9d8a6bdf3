"""Bad and unusual input at the edges the redesign added: the ids a record links, preAction as
the MCP tool sends it, an object context. Every refusal names the field as the client sent it
and writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
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


@pytest.mark.parametrize(
    ("link", "code", "field"),
    [
        ({"supersedes": ["nothex"]}, -32602, "supersedes.0"),
        ({"supersedes": ["0000aaaa"]}, -32005, "supersedes.0"),
        ({"contradicts": ["0000aaaa"]}, -32005, "contradicts.0"),
        ({"confirm": ["ABCDEF01"]}, -32602, "confirm.0"),
    ],
)
def test_linked_ids_are_checked_and_named(
    app: Decigraph, link: dict[str, Any], code: int, field: str
) -> None:
    before = app.store.seq
    for method, params in (
        ("recordDecision", {"decision": "Use Kafka for payment events", **link}),
        ("checkGuardrails", {"action": {"description": "Use Kafka for payment events", **link}}),
    ):
        if method == "checkGuardrails" and "confirm" in link:
            continue
        error = call(app, method, params)["error"]
        assert error["code"] == code
        assert error["data"]["field"].endswith(field)
    assert app.store.seq == before


def test_pre_action_as_the_mcp_tool_sends_it(app: Decigraph) -> None:
    answer = call(
        app,
        "preAction",
        {
            "action": {"description": "Cache product pages for 5 minutes", "context": {"t": 1}},
            "options": {"query_limit": 3, "auto_record": True},
            "reasons": None,
            "tags": None,
            "pattern": None,
        },
    )["result"]
    assert answer["allowed"] is True
    stored = call(app, "getDecision", {"id": answer["decisionId"]})["result"]["decision"]
    assert stored["context"] == '{"t": 1}'
    assert call(app, "preAction", {"action": {"description": "x y"}, "options": None})["result"]


def test_an_object_context_too_long_is_refused_at_the_edge(app: Decigraph) -> None:
    before = app.store.seq
    big = {"description": "Cache results", "context": {"k": "v" * 20_000}}
    for method, params in (
        ("checkGuardrails", {"action": big}),
        ("preAction", {"action": big, "options": {"autoRecord": True}}),
    ):
        error = call(app, method, params)["error"]
        assert error["code"] == -32602
        assert error["data"]["field"] == "action.context"
    assert app.store.seq == before
