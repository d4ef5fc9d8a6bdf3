"""OpenTelemetry traces of the real app (the model, embedded ChromaDB, the file log): tracing
started the way ``decigraph serve`` starts it, with the SDK's in-memory exporter in place of
OTLP, and the span tree of one ``recordDecision`` read back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from graph import tracing
from service.composition import open_app
from service.http.app import create_app
from service.http.auth import TokenTable
from service.settings import Settings
from service.telemetry import start_tracing, stop_tracing
from service.usecases import Decigraph

TOKEN = "tracing-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Traced:
    def __init__(self, http: TestClient, exporter: InMemorySpanExporter) -> None:
        self.http = http
        self.exporter = exporter

    def call(self, method: str, params: dict[str, Any], **headers: str) -> dict[str, Any]:
        self.exporter.clear()
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = self.http.post("/cstp", json=body, headers={**AUTH, **headers})
        assert answer.status_code == 200, answer.text
        document: dict[str, Any] = answer.json()
        return document

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Decigraph]:
    """One app for the module (the model loads once): the real embedder and ChromaDB."""
    data: Path = tmp_path_factory.mktemp("tracing") / "data"
    app = open_app(Settings(data_dir=data, fsync="never"))
    try:
        yield app
    finally:
        app.close()


@pytest.fixture
def traced(opened: Decigraph) -> Iterator[Traced]:
    """Tracing started as ``serve`` starts it (an in-memory exporter instead of OTLP), and the
    HTTP app created while it is on."""
    exporter = InMemorySpanExporter()
    assert start_tracing(opened.settings, exporter) is not None
    try:
        yield Traced(TestClient(create_app(opened, TokenTable({TOKEN: "agent-a"}))), exporter)
    finally:
        stop_tracing()


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def test_record_decision_is_one_trace_request_method_embed_append_index(traced: Traced) -> None:
    traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"
    answer = traced.call(
        "cstp.recordDecision",
        {"decision": "Use PostgreSQL for the billing ledger", "category": "architecture"},
        traceparent=traceparent,
    )
    seq = answer["result"]["seq"]
    spans = traced.spans()

    request = one(spans, "POST /cstp")
    assert request.kind is SpanKind.SERVER
    assert request.context is not None
    # The caller's trace context (W3C traceparent) makes the request its child.
    assert f"{request.context.trace_id:032x}" == TRACE_ID
    assert request.parent is not None
    assert f"{request.parent.span_id:016x}" == PARENT_ID
    assert dict(request.attributes or {}) == {
        "http.request.method": "POST",
        "http.route": "/cstp",
        "url.path": "/cstp",
        "http.response.status_code": 200,
    }

    [method] = children(spans, request)
    assert method.name == "cstp.recordDecision"
    assert dict(method.attributes or {}) == {
        "rpc.system": "jsonrpc",
        "rpc.method": "cstp.recordDecision",
        "decigraph.agent": "agent-a",
    }
    assert method.status.status_code is StatusCode.UNSET

    steps = children(spans, method)
    names = [s.name for s in steps]
    # The use case embeds first (outside any lock), then appends, then the indexes hear it.
    assert names.index("embed") < names.index("store.append") < names.index("index.dual")
    embed = one(steps, "embed")
    assert embed.attributes is not None
    assert embed.attributes["decigraph.texts"] >= 1
    assert embed.attributes["decigraph.model"] == "all-MiniLM-L6-v2"
    append = one(steps, "store.append")
    assert dict(append.attributes or {}) == {"decigraph.op": "record", "decigraph.seq": seq}
    index = one(steps, "index.dual")
    assert dict(index.attributes or {}) == {"decigraph.op": "record", "decigraph.seq": seq}
    # Every span of the call belongs to the caller's trace; each ends inside its parent.
    for span in spans:
        assert span.context is not None
        assert f"{span.context.trace_id:032x}" == TRACE_ID
    for child in steps:
        assert child.start_time is not None
        assert child.end_time is not None
        assert method.start_time is not None
        assert method.end_time is not None
        assert method.start_time <= child.start_time <= child.end_time <= method.end_time


def test_the_resource_names_the_service(traced: Traced) -> None:
    traced.call("cstp.recordDecision", {"decision": "Adopt Kafka for the event pipeline"})
    request = one(traced.spans(), "POST /cstp")
    assert request.resource.attributes["service.name"] == "decigraph"
    assert request.resource.attributes["service.version"]
    assert request.instrumentation_scope is not None
    assert request.instrumentation_scope.name == "decigraph"


def test_an_error_answer_carries_its_code(traced: Traced) -> None:
    answer = traced.call("cstp.recordDecision", {"decision": 5})
    assert answer["error"]["code"] == -32602
    spans = traced.spans()
    method = one(spans, "cstp.recordDecision")
    assert method.attributes is not None
    assert method.attributes["rpc.jsonrpc.error_code"] == -32602
    # Nothing was embedded or written for a call refused at the edge.
    assert [s.name for s in spans] == ["cstp.recordDecision", "POST /cstp"]


def test_a_read_is_traced_with_its_own_method_name(traced: Traced) -> None:
    traced.call("cstp.queryDecisions", {"query": "ledger database"})
    spans = traced.spans()
    request = one(spans, "POST /cstp")
    assert [s.name for s in children(spans, request)] == ["cstp.queryDecisions"]
    method = one(spans, "cstp.queryDecisions")
    # The query's embedding (and any vector read) is a step of the method.
    assert "embed" in [s.name for s in children(spans, method)]


def test_after_stop_the_hook_is_the_no_op_and_new_apps_get_no_middleware(
    opened: Decigraph,
) -> None:
    exporter = InMemorySpanExporter()
    start_tracing(opened.settings, exporter)
    stop_tracing()
    assert not tracing.enabled()
    assert tracing.span("x") is tracing.NO_SPAN
    api = create_app(opened, TokenTable({TOKEN: "agent-a"}))
    assert api.user_middleware == []
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "cstp.recordDecision",
        "params": {"decision": "Record this one untraced"},
    }
    answer = TestClient(api).post("/cstp", json=body, headers=AUTH)
    assert "result" in answer.json()
    assert exporter.get_finished_spans() == ()
