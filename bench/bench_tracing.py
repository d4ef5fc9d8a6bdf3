"""What a span costs: off (the shared no-op of graph/tracing.py) and on (the OpenTelemetry SDK).

Each case times a million ``with span(...)`` blocks in the shapes the code uses (a bare name;
two attributes, as the store append and the index listener pass; the dispatcher's three, one
of them dotted), minus the same loop with an empty body; the best of several repeats. "On"
uses the SDK with a batch processor and an exporter that drops everything, so it measures
decigraph's side (span creation, attributes, the processor's queue), not a network.

Usage: python bench/bench_tracing.py [--calls 1000000] [--repeat 7] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import timeit
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graph import tracing

SETUP = "from graph.tracing import span; traced = {'rpc.system': 'jsonrpc', 'rpc.method': 'm'}"
CASES = {
    "bare": 'with span("index.flush"):\n    pass',
    "two attributes": 'with span("store.append", op="record", seq=1):\n    pass',
    "dispatcher": 'with span("cstp.recordDecision", **traced, agent="a") as c:\n    pass',
}


def per_call_ns(statement: str, calls: int, repeat: int) -> float:
    empty = min(timeit.repeat("pass", setup=SETUP, number=calls, repeat=repeat))
    timed = min(timeit.repeat(statement, setup=SETUP, number=calls, repeat=repeat))
    return round((timed - empty) / calls * 1e9, 1)


def dispatch_ns(calls: int, repeat: int) -> float:
    """For scale: one JSON-RPC call of a method that does nothing, through the dispatcher
    (envelope checks, params validation, one method span)."""
    from pydantic import BaseModel

    from service.rpc.protocol import CallContext, Dispatcher, Registry

    class Empty(BaseModel):
        pass

    registry = Registry()
    registry.add("cstp.ping", Empty, lambda params, context: {"pong": True})
    dispatcher, context = Dispatcher(registry), CallContext("bench")
    request = {"jsonrpc": "2.0", "method": "cstp.ping", "params": {}, "id": 1}
    best = min(
        timeit.repeat(lambda: dispatcher.handle(request, context), number=calls, repeat=repeat)
    )
    return round(best / calls * 1e9, 1)


def measure(calls: int, repeat: int) -> dict[str, Any]:
    assert not tracing.enabled()
    off = {name: per_call_ns(code, calls, repeat) for name, code in CASES.items()}
    dispatch = dispatch_ns(max(calls // 20, 1_000), repeat)
    imported = sorted(m for m in sys.modules if m.startswith("opentelemetry"))

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from service.telemetry.sdk import Tracing, resource

    class Drop(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    # The configuration ``serve`` builds (a batch processor), its exporter one that drops. The
    # loop outruns the processor's worker: the spans it drops from its full queue are not
    # worth a warning each.
    logging.getLogger("opentelemetry").setLevel(logging.ERROR)
    provider = TracerProvider(resource=resource())
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    started = Tracing(provider)
    tracing.install(started.span)
    try:
        on_calls = max(calls // 20, 1_000)
        on = {name: per_call_ns(code, on_calls, repeat) for name, code in CASES.items()}
    finally:
        tracing.uninstall()
        started.shutdown()
    return {
        "calls": calls,
        "repeat": repeat,
        "python": sys.version.split()[0],
        "off_ns_per_span": off,
        "opentelemetry_modules_imported_while_off": imported,
        "on_ns_per_span": on,
        "off_ns_per_noop_rpc_call": dispatch,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = measure(args.calls, args.repeat)
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
