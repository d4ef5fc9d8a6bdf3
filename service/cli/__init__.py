"""``decigraph`` command line: serve, verify, stats, rebuild.

``rebuild`` recreates the snapshot and every index from the log (re-embedding all items);
``verify --indexes`` also compares the vector index with the log without embedding anything.

Every command that touches a store takes ``--data-dir``; values not given on the command line
come from :class:`service.settings.Settings` (environment variables ``DECIGRAPH_*``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only light modules at the top: ``decigraph recall`` beside a server imports nothing more
# (service/cli/remote.py); each command imports the store, its indexes and settings itself.
from graph.errors import DecigraphError, LogCorruptedError, StoreLockedError

from .address import ServerAddressError
from .remote import UNANSWERED, call_server, data_dir_of, token_for

if TYPE_CHECKING:
    from service.client import Transport
    from service.settings import Settings


def _settings(args: argparse.Namespace) -> Settings:
    import pydantic

    from service.composition import SetupError
    from service.settings import Settings

    overrides = {
        k: v for k, v in vars(args).items() if k in Settings.model_fields and v is not None
    }
    try:
        return Settings(**overrides)
    except pydantic.ValidationError as exc:  # e.g. DECIGRAPH_PORT=abc: one line, the setting
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "settings"
        raise SetupError(f"setting {where}: {first['msg']}") from None


def _emit(args: argparse.Namespace, data: dict[str, Any], human: str) -> None:
    print(json.dumps(data, indent=2, sort_keys=True) if args.json else human)


def cmd_serve(args: argparse.Namespace) -> int:
    from .serve import serve

    return serve(_settings(args))


def cmd_verify(args: argparse.Namespace) -> int:
    from service.composition import open_store

    settings = _settings(args)
    try:
        store = open_store(settings, read_only=True)
    except LogCorruptedError as exc:  # a changed acknowledged line: the store cannot even open
        data = {"ok": False, "line": exc.line, "problems": [str(exc)], "indexesChecked": False}
        _emit(args, data, f"verify FAILED: line {exc.line}: {exc.reason}")
        return 1
    with store:
        report = store.verify()
        problems = list(report.problems)
        if args.indexes:
            from retrieval.index import audit_vectors
            from service.composition import open_vectors

            vectors = open_vectors(settings)
            try:
                problems += audit_vectors(store, vectors)
            finally:
                vectors.close()
    ok = not problems
    data = {
        "ok": ok,
        "events": report.events,
        "lastHash": report.last_hash,
        "graphHash": report.graph_hash,
        "problems": problems,
        "indexesChecked": bool(args.indexes),
    }
    verdict = "OK" if ok else "FAILED"
    lines = [f"verify {verdict}: {report.events} events, graph {report.graph_hash[:16]}"]
    lines += [f"  - {p}" for p in problems]
    _emit(args, data, "\n".join(lines))
    return 0 if ok else 1


def cmd_stats(args: argparse.Namespace) -> int:
    from service.composition import open_store

    settings = _settings(args)
    with open_store(settings, read_only=True) as store:
        G = store.graph
        kinds = Counter(str(a.get("kind")) for _, a in G.nodes(data=True))
        edges = Counter(str(k) for _, _, k in G.edges(keys=True))
        data = {"events": store.seq, "nodes": dict(kinds), "edges": dict(edges)}
    human = f"{store.seq} events; nodes {dict(kinds)}; directed edges {dict(edges)}"
    _emit(args, data, human)
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    from service.composition import open_store

    settings = _settings(args)
    with open_store(settings, use_snapshot=False) as store:
        store.write_snapshot()
        data: dict[str, Any] = {"events": store.seq, "graphHash": store.graph_hash()}
        human = f"rebuilt snapshot from {data['events']} events"
        if not args.snapshot_only:
            from service.composition import open_index

            index = open_index(store, settings)
            try:
                report = index.rebuild()
                problems = index.check_consistency()
            finally:
                index.close()
            data.update(embedded=report.embedded, indexProblems=problems)
            human += f"; re-embedded {report.embedded} items into the vector and keyword indexes"
            if problems:
                _emit(args, data, human + "\n" + "\n".join(f"  - {p}" for p in problems))
                return 1
    _emit(args, data, human)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from service.composition import open_app
    from service.usecases import import_items

    from .jsonl import parse_lines, read_lines, stderr_progress, summary

    if args.format != "jsonl":
        return _import_export(args)
    settings = _settings(args)
    if len(args.file) != 1:
        print("decigraph: a JSONL import reads exactly one file", file=sys.stderr)
        return 2
    path = Path(args.file[0])
    if not path.is_file():
        print(f"decigraph: {path} is not a file", file=sys.stderr)
        return 2
    # Every line is validated before anything is written: with --on-error abort, a bad line
    # anywhere means nothing is written.
    report, items = parse_lines(read_lines(path))
    if report.errors and args.on_error == "abort":
        report.aborted = True
        for number, _ in items:
            report.note(number, "not_reached")
    else:
        skip = "decigraph import --skip-guardrails" if args.skip_guardrails else None
        app = open_app(settings)
        try:
            progress = None if args.json else stderr_progress
            import_items(
                app,
                items,
                args.actor,
                report,
                on_error=args.on_error,
                skip_guardrails=skip,
                progress=progress,
            )
        finally:
            app.close()
        if progress is not None:
            print(file=sys.stderr)
    _emit(args, report.to_dict(), summary(report))
    return 1 if report.errors else 0


def _import_export(args: argparse.Namespace) -> int:
    """Import a ``decigraph export`` into the store as ``import`` events, then index it."""
    from graph.importer import read_export, read_export_files
    from service.composition import open_store
    from service.usecases.bulk import restore_export

    settings = _settings(args)
    nodes, edges = read_export(
        args.format, read_export_files(args.format, [Path(p) for p in args.file])
    )
    with open_store(settings) as store:
        report = restore_export(store, nodes, edges, args.actor, note={"format": args.format})
        data: dict[str, Any] = {**report.to_dict(), "graphHash": store.graph_hash()}
    human = (
        f"imported {report.nodes} nodes and {report.edges} edges in {report.events} events "
        f"({report.skipped_nodes} nodes and {report.skipped_edges} edges already stored)"
    )
    if not args.no_index:  # the indexes catch up with the new events, embedding in batches
        from service.composition import open_app

        app = open_app(settings)
        try:
            data["embedded"] = app.index.report.embedded
        finally:
            app.close()
        human += f"; embedded {data['embedded']} items"
    _emit(args, data, human)
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    """Recall through the ``cstp.recall`` method: in-process when the store is free, else from
    the server that holds it. Either way the result is the method's own (``--json`` prints it)."""
    params: dict[str, Any] = {"query": args.query, "limit": args.limit}
    if args.intent:
        params["intent"] = args.intent
    result = call_server(data_dir_of(args.data_dir), "cstp.recall", params)  # the light path
    if result is UNANSWERED:
        with _client(_settings(args)) as client:
            result = client.call("cstp.recall", params)
    _emit(args, result, _recall_text(result))
    return 0


@contextmanager
def _client(settings: Settings) -> Iterator[Transport]:
    """A JSON-RPC client of the store: in-process as its writer, or the server holding it (the
    address it published in the data directory; never a default port)."""
    import httpx

    from service.client import InProcess, OverHttp
    from service.composition import open_app

    from .address import locate

    try:
        client: Transport = InProcess(open_app(settings), agent="cli")
    except StoreLockedError as exc:
        url = locate(settings.data_dir, exc.holder)
        client = OverHttp(url, _token(settings), timeout=60)
    try:
        yield client
    except httpx.TransportError as exc:
        message = f"cannot reach the server at {client.description}: {exc}"
        raise ServerAddressError(message) from None
    finally:
        client.close()


def _token(settings: Settings) -> str | None:
    return token_for(settings.data_dir)


def _recall_text(data: dict[str, Any]) -> str:
    lines = [f"intent {data['intent']} (preset {data['preset']})"]
    for rank, hit in enumerate(data["results"], start=1):
        lines.append(f"{rank:>2}. {hit['id']}  {hit['score']:.3f}  {hit['text'][:100]}")
    return "\n".join(lines)


def cmd_mcp(args: argparse.Namespace) -> int:
    from .mcp import run_mcp

    return run_mcp(args, _settings(args), _token)


def cmd_history(args: argparse.Namespace) -> int:
    from .history import run_history

    return run_history(args, _settings(args))


def cmd_export(args: argparse.Namespace) -> int:
    from .history import run_export

    files = run_export(args, _settings(args))
    if args.out is None:
        if len(files) > 1:
            print("decigraph: csv writes two files; give --out DIR", file=sys.stderr)
            return 2
        sys.stdout.write(next(iter(files.values())))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (out / name).write_text(content, encoding="utf-8")
    _emit(
        args, {"files": sorted(str(out / n) for n in files)}, "\n".join(str(out / n) for n in files)
    )
    return 0


def cmd_copy_log(args: argparse.Namespace) -> int:
    from service.composition import copy_log

    done = copy_log(_settings(args), args.to)
    data = {
        "events": done.events,
        "alreadyThere": done.already,
        "copied": done.copied,
        "lastHash": done.last_hash,
        "sourceGraphHash": done.source_graph_hash,
        "targetGraphHash": done.target_graph_hash,
    }
    same = done.source_graph_hash == done.target_graph_hash
    human = (
        f"copied {done.copied} events ({done.already} already there); {done.events} in all, "
        f"last hash {done.last_hash[:16]}; graph {done.target_graph_hash[:16]} "
        f"{'equals' if same else 'DIFFERS FROM'} the source's"
    )
    _emit(args, data, human)
    return 0 if same else 1


def cmd_sample(args: argparse.Namespace) -> int:
    from service.sample import generate_sample

    settings = _settings(args)
    try:
        report = generate_sample(settings.data_dir, seed=args.seed, settings=settings)
    except FileExistsError as exc:
        print(f"decigraph: {exc}", file=sys.stderr)
        return 2
    data = {
        "dataDir": str(report.data_dir),
        "seed": report.seed,
        "decisions": report.decisions,
        "memories": report.memories,
        "edges": report.edges,
        "events": report.events,
        "graphHash": report.graph_hash,
    }
    human = (
        f"sample store (seed {report.seed}) in {report.data_dir}: {report.decisions} decisions, "
        f"{report.memories} memory items, {report.edges} edges, {report.events} events"
    )
    _emit(args, data, human)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="decigraph", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, handler, text in [
        ("serve", cmd_serve, "run the HTTP service"),
        ("verify", cmd_verify, "check the hash chain and that the graph equals a replay"),
        ("stats", cmd_stats, "count nodes and edges"),
        ("rebuild", cmd_rebuild, "rewrite the snapshot and the indexes from the log"),
        ("import", cmd_import, "import JSONL items, or a json, d3, graphml or csv export"),
        ("recall", cmd_recall, "intent-weighted hybrid recall for a query"),
        ("export", cmd_export, "export the graph as json, d3, graphml, cypher or csv"),
        ("history", cmd_history, "every event that touched a decision, with what it changed"),
        ("sample", cmd_sample, "write the seeded sample store (for notebooks and demos)"),
        ("mcp", cmd_mcp, "serve the MCP tools on stdio (the store, or a server with --url)"),
        ("copy-log", cmd_copy_log, "copy the event log to PostgreSQL or a data directory"),
    ]:
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--data-dir", dest="data_dir", default=None)
        cmd.add_argument("--json", action="store_true", help="machine-readable output")
        # The same store flags on every command (serve listens on host/port; recall asks the
        # server holding the data directory at the address it published there).
        cmd.add_argument("--host", default=None)
        cmd.add_argument("--port", type=int, default=None)
        cmd.add_argument(
            "--event-store",
            dest="event_store",
            default=None,
            help="a postgresql:// URL: the event log shared by replicas (default: the file "
            "log in --data-dir; env DECIGRAPH_EVENT_STORE)",
        )
        if name == "serve":
            cmd.add_argument("--token-file", dest="token_file", default=None)
            cmd.add_argument(
                "--no-auth",
                dest="no_auth",
                action="store_const",
                const=True,
                default=None,
                help="accept unauthenticated calls (loopback addresses only)",
            )
            cmd.add_argument("--chroma-url", dest="chroma_url", default=None)
        if name == "verify":
            cmd.add_argument(
                "--indexes", action="store_true", help="also check the vector index against the log"
            )
        if name == "rebuild":
            cmd.add_argument(
                "--snapshot-only", action="store_true", help="skip rebuilding the indexes"
            )
        if name in ("verify", "rebuild", "import", "recall"):
            cmd.add_argument("--chroma-url", dest="chroma_url", default=None)
        if name == "import":
            cmd.add_argument(
                "file",
                nargs="+",
                help="JSONL (recordDecision or remember params per line), or an export: "
                "its file, or for csv its directory or nodes.csv and edges.csv",
            )
            cmd.add_argument(
                "--format",
                choices=["jsonl", "json", "d3", "graphml", "csv"],
                default="jsonl",
                help="jsonl (default) or a `decigraph export` format, imported verbatim (ids, "
                "versions, edges) as import events; cypher targets Neo4j and is not importable",
            )
            cmd.add_argument(
                "--no-index",
                dest="no_index",
                action="store_true",
                help="export formats: skip embedding now (indexes catch up on their next open)",
            )
            cmd.add_argument(
                "--on-error", dest="on_error", choices=["skip", "abort"], default="skip"
            )
            cmd.add_argument("--actor", default="import", help="agent id recorded as the author")
            cmd.add_argument(
                "--skip-guardrails",
                dest="skip_guardrails",
                action="store_true",
                help="jsonl: record decisions without the guardrail gate (each event notes it)",
            )
        if name == "copy-log":
            cmd.add_argument(
                "--to",
                required=True,
                help="a postgresql:// URL or a data directory; it must be empty or hold a prefix "
                "of this log (an interrupted copy resumes)",
            )
        if name == "sample":
            cmd.add_argument("--seed", type=int, default=7, help="the same seed, the same log")
        if name == "export":
            cmd.add_argument(
                "--format", choices=["json", "d3", "graphml", "cypher", "csv"], default="json"
            )
            cmd.add_argument("--out", default=None, help="directory to write to (default: stdout)")
            cmd.add_argument(
                "--as-of", dest="as_of", default=None, help="a seq or an ISO-8601 time"
            )
        if name == "history":
            cmd.add_argument("id", help="a decision or memory id (forgotten ones too)")
        if name == "mcp":
            from .mcp import add_arguments

            add_arguments(cmd)
        if name == "recall":
            cmd.add_argument("query")
            cmd.add_argument("--limit", type=int, default=10)
            cmd.add_argument("--intent", choices=["why", "when", "entity", "general"], default=None)
        cmd.set_defaults(handler=handler)
    return parser


#: Commands that may create files in the data directory: they run with umask 077, so the log,
#: the snapshots and ChromaDB's files are owner-only (0600, directories 0700).
WRITERS = frozenset({"serve", "import", "rebuild", "recall", "sample", "mcp", "copy-log"})


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; an operator's error (a read-only directory, an unreachable ChromaDB,
    bad rules or settings) is one line on stderr and exit code 2, never a traceback."""
    args = build_parser().parse_args(argv)
    umask = os.umask(0o077) if args.command in WRITERS else None
    try:
        return int(args.handler(args))
    except (DecigraphError, OSError) as exc:
        print(f"decigraph: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: stopped on purpose, not a crash to show
        return 130
    finally:
        if umask is not None:
            os.umask(umask)


def _one_line(exc: BaseException) -> str:
    """An error as one line (a file error names the file)."""
    if (
        isinstance(exc, OSError)
        and exc.strerror
        and exc.filename
        and not isinstance(exc, DecigraphError)
    ):
        return f"{exc.filename}: {exc.strerror}"
    return " ".join(str(exc).split())


if __name__ == "__main__":
    sys.exit(main())
