"""The composition root: the one place a process opens a store and its indexes.

Every process kind comes through here: the server and the CLI (the writer), one-shot CLI
commands that only read (:func:`open_store` read-only) and the analyst API beside a running
server (a read-only store with private in-memory indexes).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from graph.errors import DecigraphError, StoreLockedError
from graph.eventstore import is_postgres_url, open_event_store
from graph.gcpause import freeze_heap, freeze_new, refreeze_heap
from graph.ids import IdSource
from graph.lockfile import DirectoryLock
from graph.store import DecisionStore, StoreOptions
from retrieval.contradiction.llm import LLMJudge, load_config
from retrieval.embedder import Embedder, MiniLMEmbedder
from retrieval.embedworker import BootEmbedder
from retrieval.index import DualIndex
from retrieval.vector import ChromaVectorIndex

from .settings import Settings
from .usecases.breaker_model import BreakerRuntime, load_breakers
from .usecases.context import Decigraph
from .usecases.rules import Rule, load_rules

Mode = Literal["writer", "read_only", "auto"]
logger = logging.getLogger(__name__)


class SetupError(DecigraphError):
    """A setting the process cannot start with (the message names it)."""


class Timeline:
    """When each stage of a start-up ended, in seconds since the process started (read from
    ``/proc``; since this object was made where there is no ``/proc``). ``decigraph serve``
    prints it once the model is warm (README "Start-up and GC pauses")."""

    def __init__(self) -> None:
        self._origin = time.perf_counter() - _process_age()
        self._lock = threading.Lock()
        self.marks: dict[str, float] = {}

    def mark(self, stage: str) -> None:
        with self._lock:
            self.marks[stage] = round(time.perf_counter() - self._origin, 3)

    def line(self) -> str:
        with self._lock:
            marks = sorted(self.marks.items(), key=lambda item: item[1])
        return ", ".join(f"{stage} {at:.2f} s" for stage, at in marks)


def _process_age() -> float:
    """Seconds since this process started (0.0 where ``/proc`` does not say)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        hertz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - ticks / hertz)


def rule_paths(settings: Settings) -> list[Path]:
    """Where guardrail rules are read: ``<data-dir>/guardrails`` and the configured path."""
    paths = [settings.data_dir / "guardrails"]
    if settings.guardrails_path is not None:
        paths.append(settings.guardrails_path)
    return paths


def open_vectors(settings: Settings) -> ChromaVectorIndex:
    """The configured ChromaDB collection: over HTTP when a URL is set, else embedded."""
    if settings.chroma_url:
        try:
            return ChromaVectorIndex.http(
                settings.chroma_url, settings.chroma_collection, settings.chroma_token
            )
        except ValueError as exc:  # not an http(s) URL without a path
            raise SetupError(f"--chroma-url {settings.chroma_url!r}: {exc}") from None
    return ChromaVectorIndex.persistent(settings.data_dir / "chroma", settings.chroma_collection)


def open_store(
    settings: Settings,
    *,
    read_only: bool = False,
    use_snapshot: bool = True,
    clock: Callable[[], datetime] | None = None,
    ids: IdSource | None = None,
) -> DecisionStore:
    """The event-sourced store in ``settings.data_dir`` (the writer holds its directory lock)."""
    options = StoreOptions(
        fsync=settings.fsync,
        snapshot_every=0 if not use_snapshot else settings.snapshot_every,
        read_only=read_only,
        use_snapshot=use_snapshot,
        event_store=settings.event_store or None,
        commit_timeout=settings.commit_timeout,
        lock_timeout=settings.lock_timeout,
    )
    return DecisionStore.open(settings.data_dir, options, clock=clock, ids=ids)


def _embedder(settings: Settings) -> MiniLMEmbedder:
    """The bundled model, on ``settings.torch_threads`` threads (applied when it loads)."""
    return MiniLMEmbedder(threads=settings.torch_threads)


def open_index(
    store: DecisionStore, settings: Settings, embedder: Embedder | None = None
) -> DualIndex:
    """The store's indexes, caught up with its log and following it from now on."""
    return DualIndex.open(store, embedder or _embedder(settings), open_vectors(settings))


def open_app(
    settings: Settings,
    embedder: Embedder | None = None,
    *,
    mode: Mode = "writer",
    timeline: Timeline | None = None,
) -> Decigraph:
    """A store with its indexes and rules, ready for the use cases.

    ``mode="writer"`` takes the directory lock (:class:`~graph.errors.StoreLockedError` when a
    server holds it); ``"read_only"`` writes nothing in the directory and keeps its vectors in a
    private in-memory ChromaDB; ``"auto"`` is the writer when it can be, else read-only.
    ``timeline`` hears when the store, ChromaDB and the indexes are open. With
    ``settings.gc_freeze`` what was loaded is then frozen (:func:`graph.gcpause.freeze_heap`).
    """
    timeline = timeline or Timeline()
    rules = load_rules(rule_paths(settings))  # bad rules stop start-up, before any lock
    breakers = BreakerRuntime(load_breakers(rule_paths(settings)))  # so do bad breakers
    if mode != "read_only":
        try:
            app = _writer(settings, embedder, rules, breakers, timeline)
        except StoreLockedError:
            if mode == "writer":
                raise
        else:
            _load_model_here(embedder)
            return app
    store = open_store(settings, read_only=True)
    timeline.mark("store")
    try:
        vectors = ChromaVectorIndex.ephemeral(f"reader-{uuid.uuid4().hex[:12]}")
        index = DualIndex.open_detached(store, embedder or _embedder(settings), vectors)
    except BaseException:
        store.close()
        raise
    timeline.mark("indexes")
    app = Decigraph(settings, store, index, rules, read_only=True, breakers=breakers)
    _freeze_loaded(app)
    _load_model_here(embedder)
    return app


def _load_model_here(embedder: Embedder | None) -> None:
    """The store and indexes are open: the GIL is free for this process's own copy of the
    model (a :class:`BootEmbedder`'s helper answers meanwhile)."""
    if isinstance(embedder, BootEmbedder):
        embedder.start_local()


def _writer(
    settings: Settings,
    embedder: Embedder | None,
    rules: list[Rule],
    breakers: BreakerRuntime,
    timeline: Timeline,
) -> Decigraph:
    store = open_store(settings)
    timeline.mark("store")
    try:
        vectors = open_vectors(settings)
        timeline.mark("chromadb")
        index = DualIndex.open(store, embedder or _embedder(settings), vectors)
    except BaseException:
        store.close()
        raise
    timeline.mark("indexes")
    app = Decigraph(settings, store, index, rules, breakers=breakers, llm_judge=llm_judge(settings))
    store.reset_listeners.append(app.forget_derived)
    _freeze_loaded(app)
    store.follow()  # a shared log: apply the other replicas' events as they commit
    return app


def llm_judge(settings: Settings) -> LLMJudge | None:
    """The optional second-opinion judge ``settings`` configure (None when unset)."""
    config = load_config(
        settings.judge_url,
        settings.judge_model,
        settings.judge_key,
        settings.judge_key_file,
        settings.judge_timeout,
    )
    return None if config is None else LLMJudge(config)


def _freeze_loaded(app: Decigraph) -> None:
    """Freeze the loaded store and indexes, again after each rebuild of the store from its log
    (the last reset listener: the indexes and derived views are rebuilt by then), and each past
    graph an ``asOf`` read builds (:mod:`graph.timetravel`)."""
    if app.settings.gc_freeze:
        freeze_heap()
        app.store.reset_listeners.append(refreeze_heap)
        app.past.freeze = True
        app.store.listeners.append(_Refreezer())


class _Refreezer:
    """Freeze again every :attr:`EVERY` events applied: what writes add since the last freeze
    is long-lived too, and unfrozen it would grow the generation-2 pauses back. The garbage
    made since the last freeze is collected first (:func:`graph.gcpause.freeze_new`)."""

    EVERY = 10_000

    def __init__(self) -> None:
        self.applied = 0

    def __call__(self, event: object) -> None:
        self.applied += 1
        if self.applied % self.EVERY == 0:
            freeze_new()


@dataclass(frozen=True)
class CopiedLog:
    """What ``decigraph copy-log`` did: the events on each side and both graphs' hashes
    (equal: the lines were copied byte for byte)."""

    events: int
    already: int
    copied: int
    last_hash: str
    source_graph_hash: str
    target_graph_hash: str


def copy_log(settings: Settings, target: str) -> CopiedLog:
    """Copy the configured store's log (``--data-dir`` or ``--event-store``) to ``target``: a
    ``postgresql://`` URL or a data directory (its file log; no process may hold it)."""
    from graph.eventstore.copy import copy_log as copy_events

    source = open_event_store(settings.data_dir, settings.event_store or None)
    if is_postgres_url(target):
        sink, lock = open_event_store(Path("."), target), None
    else:
        directory = Path(target)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        sink, lock = open_event_store(directory), DirectoryLock(directory)
        lock.acquire()
    try:
        source.open(read_only=True)
        sink.open(read_only=False)
        report = copy_events(source, sink)
    finally:
        source.close()
        sink.close()
        if lock is not None:
            lock.release()
    read_only = StoreOptions(read_only=True, use_snapshot=False)
    hashes = []
    for where, store_url in ((settings.data_dir, settings.event_store), (Path(target), target)):
        url = store_url if store_url and is_postgres_url(store_url) else None
        options = replace(read_only, event_store=url)
        directory = Path(where) if url is None else Path(f"/nonexistent/{uuid.uuid4().hex}")
        with DecisionStore.open(directory, options) as store:
            hashes.append(store.graph_hash())
    return CopiedLog(
        report.events, report.already, report.copied, report.last_hash, hashes[0], hashes[1]
    )


class Warmup:
    """The embedding model loaded and run once, in the background, as a server starts: the
    first write then does not pay the model's load (seconds), and ``/ready`` says when it is
    done (:attr:`state`: ``pending``, ``loading``, ``warm`` or ``failed``).

    Built on an app (its index's embedder) or, so that the model loads while the store and the
    indexes open (:meth:`early`), on the embedder the app will be given. A request that
    embeds before the model is loaded waits for it (the embedder loads once, under its lock);
    nothing answers from a half-loaded model. ``freeze``: :func:`graph.gcpause.freeze_heap`
    once warm (the model's modules and weights are long-lived too).
    """

    TEXT = "decigraph warm-up"

    def __init__(
        self,
        app: Decigraph | Embedder,
        *,
        freeze: bool = False,
        timeline: Timeline | None = None,
    ) -> None:
        self._own: Embedder | None = None if isinstance(app, Decigraph) else app
        self._embed = app.index.embed if isinstance(app, Decigraph) else app.embed
        self.freeze = freeze
        self.timeline = timeline
        self.state: ModelState = "pending"
        self.error: str | None = None
        self.seconds: float | None = None
        self.done = threading.Event()

    @classmethod
    def early(cls, settings: Settings) -> Warmup:
        """A warm-up of the model ``settings`` configure, started now, before the store opens:
        pass :attr:`embedder` and :attr:`timeline` (its first mark: ``imports``, now) to
        :func:`open_app`."""
        timeline = Timeline()
        timeline.mark("imports")
        embedder: Embedder = _embedder(settings)
        if settings.model_boot == "process":

            def loaded_here() -> None:
                timeline.mark("model loaded in process")
                if settings.gc_freeze:
                    freeze_heap()

            embedder = BootEmbedder(_embedder(settings), on_local=loaded_here)
        warmup = cls(embedder, freeze=settings.gc_freeze, timeline=timeline)
        warmup.start()
        return warmup

    @property
    def embedder(self) -> Embedder | None:
        """The embedder warmed, when built on one (``None``: on an app's)."""
        return self._own

    def run(self) -> None:
        self.state = "loading"
        started = time.perf_counter()
        try:
            self._embed([self.TEXT])
        except Exception as exc:  # reported by /ready; every write would hit it too
            logger.exception("warming the embedding model failed")
            self.error = f"{type(exc).__name__}: {exc}"
            self.state = "failed"
            self.done.set()
            return
        self.seconds = round(time.perf_counter() - started, 3)
        if self.timeline is not None:
            self.timeline.mark("model warm")
        if self.freeze:
            freeze_heap()
        self.state = "warm"
        self.done.set()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="decigraph-warmup", daemon=True)
        thread.start()
        return thread


#: Where warming the model stands.
ModelState = Literal["pending", "loading", "warm", "failed"]


class Readiness(BaseModel):
    """Whether the app can answer as fast and as completely as it will: the model warm and
    every node of the graph in the indexes (which follow the log as it is appended). Also the
    body (and OpenAPI schema) of ``GET /ready``."""

    model_config = ConfigDict(frozen=True)

    ready: bool
    model: ModelState
    indexes: Literal["caught up", "behind"]
    seq: int
    nodes: int
    edges: int
    indexed: int
    error: str | None = None
    #: A shared log: the seq of its head, how far this replica is behind it, and whether
    #: that is within ``ready_max_lag`` (``None`` with the file log: this process writes it).
    log_head: int | None = None
    lag: int | None = None
    log: Literal["caught up", "behind", "unreachable"] | None = None


def readiness(app: Decigraph, warmup: Warmup | None) -> Readiness:
    """The app's readiness now (``warmup`` ``None``: no model to warm, as with test fakes)."""
    with app.store.lock:
        G = app.store.graph
        nodes, edges, indexed = G.number_of_nodes(), G.number_of_edges(), len(app.index.matrix)
        caught_up = app.index.healthy and indexed == nodes
        seq = app.store.seq
    model = "warm" if warmup is None else warmup.state
    head = lag = None
    log: Literal["caught up", "behind", "unreachable"] | None = None
    if app.store.log.shared:
        try:
            head = app.store.log_head()
        except DecigraphError:
            log = "unreachable"
        else:
            lag = max(0, head - seq)
            log = "caught up" if lag <= app.settings.ready_max_lag else "behind"
    return Readiness(
        # An unreachable database (a failover under way) leaves the replica serving reads from
        # what it has applied; only a replica known to lag is taken out of the rotation.
        ready=caught_up and model == "warm" and log != "behind",
        log_head=head,
        lag=lag,
        log=log,
        model=model,
        indexes="caught up" if caught_up else "behind",
        seq=seq,
        nodes=nodes,
        edges=edges,
        indexed=indexed,
        error=None if warmup is None else warmup.error,
    )


def announce_startup(warmup: Warmup, serving: Callable[[], bool]) -> None:
    """Print the warm-up's start-up timeline to stderr once the server listens (``serving()``)
    and the model is warm (or failed), from a daemon thread: ``decigraph: start-up: imports
    0.9 s, store 4.1 s, ...`` (seconds since the process started)."""
    timeline = warmup.timeline
    if timeline is None:
        return

    def watch() -> None:
        while not serving():
            time.sleep(0.02)
        timeline.mark("serving")
        warmup.done.wait()
        if isinstance(warmup.embedder, BootEmbedder):  # and its own copy, after the helper's
            warmup.embedder.local_done.wait(600)
        print(f"decigraph: start-up: {timeline.line()}", file=sys.stderr, flush=True)

    threading.Thread(target=watch, name="decigraph-startup", daemon=True).start()
