"""The tracing hook (graph/tracing.py): a shared no-op span until a factory is installed, the
installed factory afterwards, and no OpenTelemetry import anywhere while tracing is off."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from graph import tracing
from graph.tracing import NO_SPAN, Attribute, Span, span

ROOT = Path(__file__).resolve().parents[2]


class Recorded:
    """A span the fake factory hands out: its name, attributes and whether it failed."""

    def __init__(self, name: str, attributes: Mapping[str, Attribute]) -> None:
        self.name = name
        self.attributes: dict[str, Attribute] = dict(attributes)
        self.failed: str | None = None
        self.error: BaseException | None = None
        self.children: list[Recorded] = []

    def set_attribute(self, key: str, value: Attribute) -> None:
        self.attributes[key] = value

    def fail(self, description: str) -> None:
        self.failed = description


class FakeTracer:
    def __init__(self) -> None:
        self.roots: list[Recorded] = []
        self._open: list[Recorded] = []

    def __call__(
        self, name: str, attributes: Mapping[str, Attribute]
    ) -> AbstractContextManager[Span]:
        return self._span(name, attributes)

    @contextmanager
    def _span(self, name: str, attributes: Mapping[str, Attribute]) -> Iterator[Span]:
        recorded = Recorded(name, attributes)
        (self._open[-1].children if self._open else self.roots).append(recorded)
        self._open.append(recorded)
        try:
            yield recorded
        except BaseException as exc:
            recorded.error = exc
            raise
        finally:
            self._open.pop()


@pytest.fixture
def fake() -> Iterator[FakeTracer]:
    tracer = FakeTracer()
    tracing.install(tracer)
    try:
        yield tracer
    finally:
        tracing.uninstall()


def test_off_every_span_is_the_one_shared_no_op() -> None:
    assert not tracing.enabled()
    first, second = span("store.append", seq=1, op="record"), span("embed")
    assert first is NO_SPAN
    assert second is NO_SPAN
    with first as current, second as inner:
        assert current is NO_SPAN
        assert inner is NO_SPAN
        current.set_attribute("seq", 2)
        current.fail("nothing happens")


def test_the_no_op_span_lets_exceptions_through() -> None:
    with pytest.raises(ValueError, match="boom"), span("store.append"):
        raise ValueError("boom")


def test_installed_spans_go_to_the_factory_nested_with_their_attributes(
    fake: FakeTracer,
) -> None:
    assert tracing.enabled()
    with span("cstp.recordDecision", **{"rpc.method": "cstp.recordDecision"}, agent="a") as call:
        with span("embed", texts=2):
            pass
        with span("store.append", op="record", seq=7):
            pass
        call.set_attribute("rpc.jsonrpc.error_code", -32602)
    [root] = fake.roots
    assert root.name == "cstp.recordDecision"
    assert root.attributes == {
        "rpc.method": "cstp.recordDecision",
        "agent": "a",
        "rpc.jsonrpc.error_code": -32602,
    }
    assert [(c.name, c.attributes) for c in root.children] == [
        ("embed", {"texts": 2}),
        ("store.append", {"op": "record", "seq": 7}),
    ]


def test_an_exception_reaches_the_installed_span_and_the_caller(fake: FakeTracer) -> None:
    with pytest.raises(KeyError), span("index.dual"):
        raise KeyError("x")
    assert isinstance(fake.roots[0].error, KeyError)


def test_uninstall_goes_back_to_the_no_op(fake: FakeTracer) -> None:
    with span("a"):
        pass
    tracing.uninstall()
    assert not tracing.enabled()
    assert span("b") is NO_SPAN
    assert [r.name for r in fake.roots] == ["a"]


def test_a_span_open_when_tracing_stops_still_ends(fake: FakeTracer) -> None:
    with span("outer") as outer:
        tracing.uninstall()
        with span("inner") as inner:
            assert inner is NO_SPAN
        outer.set_attribute("after", True)
    assert fake.roots[0].attributes == {"after": True}


def test_the_dispatcher_traces_each_call_with_method_agent_and_error_code(
    fake: FakeTracer,
) -> None:
    from pydantic import BaseModel

    from service.rpc.protocol import CallContext, Dispatcher, Registry

    class Empty(BaseModel):
        pass

    def fails(params: Any, context: CallContext) -> Mapping[str, Any]:
        raise RuntimeError("a bug")

    registry = Registry()
    registry.add("cstp.ping", Empty, lambda params, context: {"pong": True})
    registry.add("cstp.fails", Empty, fails)
    dispatcher = Dispatcher(registry)
    context = CallContext("agent-7")
    batch = [
        {"jsonrpc": "2.0", "method": "cstp.ping", "params": {}, "id": 1},
        {"jsonrpc": "2.0", "method": "cstp.ping", "params": {"x": []}, "id": 2},
        {"jsonrpc": "2.0", "method": "cstp.nope", "id": 3},
        {"jsonrpc": "2.0", "method": "cstp.fails", "id": 4},
    ]
    dispatcher.handle(batch, context)
    spans = [(s.name, s.attributes, s.failed) for s in fake.roots]
    common = {"rpc.system": "jsonrpc", "agent": "agent-7"}
    assert spans == [
        ("cstp.ping", {**common, "rpc.method": "cstp.ping"}, None),
        # an undeclared param is dropped with a warning: the call still succeeds
        ("cstp.ping", {**common, "rpc.method": "cstp.ping"}, None),
        (
            "rpc.unknown",
            {**common, "rpc.method": "unknown", "rpc.jsonrpc.error_code": -32601},
            None,
        ),
        (
            "cstp.fails",
            {**common, "rpc.method": "cstp.fails", "rpc.jsonrpc.error_code": -32603},
            "internal error",
        ),
    ]


def test_the_domain_and_retrieval_never_import_a_tracing_library() -> None:
    forbidden = re.compile(r"^\s*(from|import)\s+(opentelemetry|service)\b", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("graph", "retrieval")
        for path in (ROOT / package).rglob("*.py")
        if forbidden.search(path.read_text())
    ]
    assert offenders == []


def test_tracing_off_imports_no_opentelemetry() -> None:
    """The store, the indexes, the dispatcher and the telemetry package itself load no
    OpenTelemetry module while tracing is off (FastAPI may import the API on its own, when it
    is installed; never the SDK)."""
    script = (
        "import sys\n"
        "import graph.store, graph.tracing, retrieval.index, retrieval.embedder\n"
        "import service.rpc.protocol, service.telemetry\n"
        "from service.settings import Settings\n"
        "assert service.telemetry.start_tracing(Settings()) is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
        "import service.http.app\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')))\n"
    )
    env = {**os.environ, "DECIGRAPH_TRACING": "off"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "[]"]


def test_the_environment_can_veto_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    from service.settings import Settings
    from service.telemetry import disabled_by_environment, start_tracing

    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert disabled_by_environment() == "OTEL_SDK_DISABLED=true"
    assert start_tracing(Settings(tracing="otlp")) is None
    monkeypatch.setenv("OTEL_SDK_DISABLED", "false")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert disabled_by_environment() == "OTEL_TRACES_EXPORTER=none"
    assert start_tracing(Settings(tracing="otlp")) is None
    assert not tracing.enabled()


def test_the_tracing_setting_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from service.settings import Settings

    monkeypatch.setenv("DECIGRAPH_TRACING", "otlp")
    assert Settings().tracing == "otlp"
    monkeypatch.setenv("DECIGRAPH_TRACING", "jaeger")
    with pytest.raises(ValidationError, match="tracing"):
        Settings()
    monkeypatch.delenv("DECIGRAPH_TRACING")
    assert Settings().tracing == "off"


def test_tracing_without_the_extra_is_one_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from service.composition import SetupError
    from service.settings import Settings
    from service.telemetry import start_tracing

    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    monkeypatch.setitem(sys.modules, "service.telemetry.sdk", None)  # as if not installed
    with pytest.raises(SetupError, match=r"pip install 'decigraph\[otel\]'"):
        start_tracing(Settings(tracing="otlp"))
    assert not tracing.enabled()


@pytest.fixture
def sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Tracing through the real SDK (service/telemetry/sdk.py), spans kept in memory."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from service.settings import Settings
    from service.telemetry import start_tracing, stop_tracing

    for name in ("OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    exporter = InMemorySpanExporter()
    assert start_tracing(Settings(), exporter) is not None
    try:
        yield exporter
    finally:
        stop_tracing()


def test_the_sdk_factory_names_attributes_nests_and_marks_failures(sdk: Any) -> None:
    from opentelemetry.trace import StatusCode

    with span("cstp.recordDecision", **{"rpc.method": "cstp.recordDecision"}, agent="a") as call:
        with span("store.append", op="record", seq=3) as append:
            append.set_attribute("bytes", 10)
        call.fail("internal error")
    with pytest.raises(KeyError), span("index.dual"):
        raise KeyError("x")
    append_span, call_span, index_span = sdk.get_finished_spans()
    assert dict(call_span.attributes) == {
        "rpc.method": "cstp.recordDecision",
        "decigraph.agent": "a",
    }
    assert dict(append_span.attributes) == {
        "decigraph.op": "record",
        "decigraph.seq": 3,
        "decigraph.bytes": 10,
    }
    assert append_span.parent.span_id == call_span.context.span_id
    assert call_span.status.status_code is StatusCode.ERROR
    assert call_span.status.description == "internal error"
    assert index_span.status.status_code is StatusCode.ERROR
    assert [event.name for event in index_span.events] == ["exception"]
    assert call_span.resource.attributes["service.name"] == "decigraph"


def test_the_service_name_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from service.telemetry.sdk import resource

    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    assert resource().attributes["service.name"] == "decigraph"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "ledger-decisions")
    assert resource().attributes["service.name"] == "ledger-decisions"
    monkeypatch.delenv("OTEL_SERVICE_NAME")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes,team=infra")
    assert resource().attributes["service.name"] == "from-attributes"


def test_the_otlp_protocol_is_chosen_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from service.telemetry.sdk import TracingConfigError, otlp_exporter

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    exporter = otlp_exporter()
    assert isinstance(exporter, OTLPSpanExporter)
    exporter.shutdown()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.raises(TracingConfigError, match="http/json"):
        otlp_exporter()
