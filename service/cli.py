"""``decigraph`` command line: serve, verify, stats, rebuild.

Every command that touches a store takes ``--data-dir``; values not given on the command line
come from :class:`service.settings.Settings` (environment variables ``DECIGRAPH_*``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from graph.errors import DecigraphError
from graph.store import DecisionStore, StoreOptions

from .settings import Settings


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {
        k: v for k, v in vars(args).items() if k in Settings.model_fields and v is not None
    }
    return Settings(**overrides)


def _emit(args: argparse.Namespace, data: dict[str, Any], human: str) -> None:
    print(json.dumps(data, indent=2, sort_keys=True) if args.json else human)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .app import create_app

    settings = _settings(args)
    options = StoreOptions(fsync=settings.fsync, snapshot_every=settings.snapshot_every)
    with DecisionStore.open(settings.data_dir, options) as store:
        print(f"decigraph: {store.seq} events from {settings.data_dir}", file=sys.stderr)
        uvicorn.run(create_app(store), host=settings.host, port=settings.port, log_level="info")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    settings = _settings(args)
    with DecisionStore.open(settings.data_dir, StoreOptions(read_only=True)) as store:
        report = store.verify()
    data = {
        "ok": report.ok,
        "events": report.events,
        "lastHash": report.last_hash,
        "graphHash": report.graph_hash,
        "problems": report.problems,
    }
    verdict = "OK" if report.ok else "FAILED"
    lines = [f"verify {verdict}: {report.events} events, graph {report.graph_hash[:16]}"]
    lines += [f"  - {p}" for p in report.problems]
    _emit(args, data, "\n".join(lines))
    return 0 if report.ok else 1


def cmd_stats(args: argparse.Namespace) -> int:
    settings = _settings(args)
    with DecisionStore.open(settings.data_dir, StoreOptions(read_only=True)) as store:
        G = store.graph
        kinds = Counter(str(a.get("kind")) for _, a in G.nodes(data=True))
        edges = Counter(str(k) for _, _, k in G.edges(keys=True))
        data = {"events": store.seq, "nodes": dict(kinds), "edges": dict(edges)}
    human = f"{store.seq} events; nodes {dict(kinds)}; directed edges {dict(edges)}"
    _emit(args, data, human)
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    settings = _settings(args)
    options = StoreOptions(snapshot_every=0, use_snapshot=False)
    with DecisionStore.open(settings.data_dir, options) as store:
        store.write_snapshot()
        data = {"events": store.seq, "graphHash": store.graph_hash()}
    _emit(args, data, f"rebuilt snapshot from {data['events']} events")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="decigraph", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, handler, text in [
        ("serve", cmd_serve, "run the HTTP service"),
        ("verify", cmd_verify, "check the hash chain and that the graph equals a replay"),
        ("stats", cmd_stats, "count nodes and edges"),
        ("rebuild", cmd_rebuild, "rewrite the snapshot from a full replay of the log"),
    ]:
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--data-dir", dest="data_dir", default=None)
        cmd.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "serve":
            cmd.add_argument("--host", default=None)
            cmd.add_argument("--port", type=int, default=None)
        cmd.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except DecigraphError as exc:
        print(f"decigraph: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
