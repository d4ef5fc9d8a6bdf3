"""``decigraph serve`` with ``DECIGRAPH_TRACING=otlp`` exporting to a collector run by the test
(a local HTTP server accepting OTLP/HTTP protobuf at ``POST /v1/traces``): the spans arrive
while the server runs (``OTEL_BSP_SCHEDULE_DELAY``) and the ones still queued on shutdown."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.e2e.test_serve import start_serve, stop_serve

TOKEN = "tracing-e2e-token-0123456789"


class Collector:
    """The OTLP/HTTP trace endpoint: every request body it received, decoded."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with collector._lock:
                    kind = self.headers.get("Content-Type", "")
                    collector.requests.append((self.path, kind, body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def bodies(self) -> list[bytes]:
        with self._lock:
            return [body for _, _, body in self.requests]

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """Every span received, with its resource's attributes."""
        found = []
        for body in self.bodies():
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    found.extend((resource, span) for span in scope_spans.spans)
        return found

    def wait_for(self, name: bytes, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(name in body for body in self.bodies()):
                return True
            time.sleep(0.1)
        return False


@pytest.fixture
def collector() -> Iterator[Collector]:
    running = Collector()
    running.thread.start()
    try:
        yield running
    finally:
        running.server.shutdown()
        running.server.server_close()


def traced_env(collector: Collector, delay_ms: int) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("OTEL_") and key != "DECIGRAPH_TRACING"
    }
    return {
        **env,
        "CSTP_AUTH_TOKENS": f"agent-e:{TOKEN}",
        "DECIGRAPH_TRACING": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_SERVICE_NAME": "decigraph-e2e",
        "OTEL_BSP_SCHEDULE_DELAY": str(delay_ms),
    }


def record(url: str, text: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "cstp.recordDecision",
        "params": {"decision": text},
    }
    answer = httpx.post(
        f"{url}/cstp", json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
    )
    assert answer.status_code == 200, answer.text
    document: dict[str, Any] = answer.json()
    assert "result" in document, document
    return document


def test_serve_exports_the_span_tree_over_otlp_http(tmp_path: Path, collector: Collector) -> None:
    proc, url = start_serve(tmp_path / "data", traced_env(collector, delay_ms=100))
    try:
        seq = record(url, "Use PostgreSQL for the billing ledger")["result"]["seq"]
        # Exported by the batch processor's schedule while the server runs.
        assert collector.wait_for(b"cstp.recordDecision", timeout=30), collector.requests
    finally:
        stop_serve(proc)
    assert proc.returncode == 0
    assert {path for path, _, _ in collector.requests} == {"/v1/traces"}
    assert {kind for _, kind, _ in collector.requests} == {"application/x-protobuf"}

    received = collector.spans()
    assert {resource["service.name"] for resource, _ in received} == {"decigraph-e2e"}
    spans = [span for _, span in received]
    [method] = [s for s in spans if s.name == "cstp.recordDecision"]
    trace = [s for s in spans if s.trace_id == method.trace_id]
    by_id = {s.span_id: s for s in trace}
    [request] = [s for s in trace if s.name == "POST /cstp"]
    assert method.parent_span_id == request.span_id
    steps = {s.name: s for s in trace if s.parent_span_id == method.span_id}
    assert {"embed", "store.append", "index.dual"} <= set(steps)
    attributes = {
        a.key: a.value.int_value or a.value.string_value for a in steps["store.append"].attributes
    }
    assert attributes == {"decigraph.op": "record", "decigraph.seq": seq}
    method_attributes = {a.key: a.value.string_value for a in method.attributes}
    assert method_attributes["decigraph.agent"] == "agent-e"
    assert method_attributes["rpc.method"] == "cstp.recordDecision"
    assert all(s.parent_span_id in by_id for s in trace if s.span_id != request.span_id)


def test_serve_flushes_queued_spans_when_it_stops(tmp_path: Path, collector: Collector) -> None:
    # A schedule far longer than the test: only the shutdown's flush can export the spans.
    proc, url = start_serve(tmp_path / "data", traced_env(collector, delay_ms=600_000))
    try:
        record(url, "Flush the spans on the way out")
        time.sleep(0.5)
        assert not any(b"cstp.recordDecision" in body for body in collector.bodies())
    finally:
        stop_serve(proc)
    assert proc.returncode == 0
    assert collector.wait_for(b"cstp.recordDecision", timeout=5)
    assert "cstp.recordDecision" in [span.name for _, span in collector.spans()]
