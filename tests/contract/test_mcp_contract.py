"""Every MCP tool of the table (:mod:`tests.contract.mcp_tools`), through the tool layer and
the same JSON-RPC dispatcher ``/mcp`` uses, on a store seeded as the client contract seeds it
(the SDK over real sockets and stdio is ``tests/e2e/test_mcp_e2e.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from service.mcp.server import dispatcher_invoke
from service.mcp.tools import build_tools, run_tool
from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases.rules import load_rules
from tests.contract.clients import Row
from tests.contract.mcp_tools import TOOL_ROWS
from tests.contract.test_contract import RULES, check, fill, seed
from tests.support.fakes import fake_app

pytestmark = pytest.mark.unit

TOOLS = {tool.name: tool for tool in build_tools()}


class InProcess:
    """The contract's seeding client, in-process."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer: dict[str, Any] = self.dispatcher.handle(request, CallContext("agent-a"))
        return answer

    def ok(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.call(method, params)
        assert "error" not in answer, answer
        result: dict[str, Any] = answer["result"]
        return result


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Dispatcher, dict[str, Any]]]:
    data = tmp_path_factory.mktemp("mcp-contract") / "data"
    (data / "guardrails").mkdir(parents=True)
    (data / "guardrails" / "billing.yaml").write_text(RULES)
    with fake_app(data, seed=5) as app:
        app.rules = load_rules([data / "guardrails"])
        dispatcher = Dispatcher(build_registry(app))
        yield dispatcher, seed(InProcess(dispatcher))  # type: ignore[arg-type]


def test_every_tool_has_a_row() -> None:
    assert {row.method for row in TOOL_ROWS} == set(TOOLS)


@pytest.mark.parametrize("row", TOOL_ROWS, ids=[f"{r.method}-{n}" for n, r in enumerate(TOOL_ROWS)])
def test_tool_shapes(seeded: tuple[Dispatcher, dict[str, Any]], row: Row) -> None:
    dispatcher, values = seeded
    invoke = dispatcher_invoke(dispatcher)
    outcome = run_tool(
        TOOLS[row.method],
        fill(row.params, values),
        lambda method, params: invoke(method, params, "agent-a"),
    )
    assert not outcome.is_error, outcome.payload
    problems = [p for spec in row.reads if (p := check(outcome.payload, spec)) is not None]
    assert not problems, (row.method, problems, outcome.payload)
