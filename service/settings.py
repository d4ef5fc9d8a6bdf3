"""The one validated settings object (env prefix ``DECIGRAPH_``; CLI flags override)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="DECIGRAPH_", extra="ignore", populate_by_name=True
    )

    data_dir: Path = Path("./data")
    host: str = "127.0.0.1"
    port: int = Field(default=8100, ge=1, le=65535)
    fsync: Literal["always", "never"] = "always"
    snapshot_every: int = Field(default=10_000, ge=0)
    chroma_url: str | None = None
    """A ChromaDB server (``http://host:port``); unset: an embedded store in ``data_dir/chroma``."""
    chroma_collection: str = Field(default="decigraph", min_length=3, max_length=512)
    chroma_token: str | None = None
    auth_tokens: str | None = Field(
        default=None, validation_alias=AliasChoices("CSTP_AUTH_TOKENS", "DECIGRAPH_AUTH_TOKENS")
    )
    """``agent:token`` pairs, comma-separated (CSTP's variable is accepted too)."""
    token_file: Path | None = None
    no_auth: bool = False
    max_body_bytes: int = Field(default=1_000_000, ge=1_024)
    tracing: Literal["off", "otlp", "console"] = "off"
    """OpenTelemetry traces of ``serve`` (the ``otel`` extra): ``otlp`` exports them as the
    ``OTEL_EXPORTER_OTLP_*`` variables say, ``console`` prints them; ``OTEL_SDK_DISABLED=true``
    or ``OTEL_TRACES_EXPORTER=none`` keeps them off (README "Tracing")."""
    guardrails_path: Path | None = None
    """A YAML file or directory of guardrail rules (``<data-dir>/guardrails`` is always read)."""
    relevance_floor: float = Field(default=0.3, ge=0.0, le=1.0)
    """The least absolute relevance (:mod:`retrieval.relevance`, a probability calibrated on
    labelled agent sessions) a decision needs to be named as context by ``preAction`` and
    ``getSessionContext``; conflicts are always named."""
    recall_floor: float = Field(default=0.1, ge=0.0, le=1.0)
    """``recall`` drops hits below this absolute relevance (unless the graph walk reached them
    from a kept hit): a search, so only what is clearly unrelated goes."""
    salience_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    """The graph guardrail protects an active decision whose salience exceeds this. Salience
    (:mod:`graph.algorithms.salience`) means the same at every graph size: 0 for a decision
    nothing relies on, 0.46 / 0.63 / 0.72 for one / two / three direct dependents; 0.5 protects
    a decision two or more decisions rely on (directly or through each other)."""
    tracker_input_ttl: float = Field(
        default=300.0,
        gt=0,
        validation_alias=AliasChoices("CSTP_TRACKER_INPUT_TTL", "DECIGRAPH_TRACKER_INPUT_TTL"),
    )
    """Seconds a read stays in the deliberation tracker (CSTP's variable is accepted too)."""
    tracker_session_ttl: float = Field(
        default=1800.0,
        gt=0,
        validation_alias=AliasChoices("CSTP_TRACKER_SESSION_TTL", "DECIGRAPH_TRACKER_SESSION_TTL"),
    )
    """Seconds of inactivity after which a tracker session expires."""
    tracker_history_size: int = Field(
        default=50,
        ge=0,
        le=1_000,
        validation_alias=AliasChoices(
            "CSTP_TRACKER_HISTORY_SIZE", "DECIGRAPH_TRACKER_HISTORY_SIZE"
        ),
    )
    """Consumed or expired tracker sessions kept per agent (``debugTracker``'s history)."""
    event_store: str | None = None
    """Where the event log lives: unset, ``<data-dir>/events.jsonl`` (one process writes); a
    ``postgresql://user:password@host:port/db`` URL, a log shared by any number of replicas,
    each with its own data directory for its snapshot and indexes (README "Running on several
    machines"). Connect directly or through a session-pooling proxy, never transaction
    pooling (the log's head lock and LISTEN need a session)."""
    commit_timeout: float = Field(default=10.0, gt=0, le=600)
    """Seconds a shared log's commit may wait (for its synchronous standby) before the write
    answers "outcome unknown" (retryable, with the event id to look up)."""
    lock_timeout: float = Field(default=10.0, gt=0, le=600)
    """Seconds a write waits for another replica's write to the shared log before answering
    "busy" (retryable; nothing written)."""
    min_seq_timeout: float = Field(default=5.0, ge=0, le=60)
    """Seconds a read with ``minSeq`` waits for this replica to apply that event before
    answering "not caught up" (retryable)."""
    ready_max_lag: int = Field(default=100, ge=0)
    """Events a replica of a shared log may be behind the log's head and still be ready."""
    history_checkpoint_every: int = Field(default=5000, ge=100)
    """``asOf`` reads replay the log from the nearest checkpoint; one is written every this
    many events of history someone looked at (``<data-dir>/history/``)."""
    history_cache: int = Field(default=1, ge=0, le=64)
    """Past graphs kept in memory for ``asOf`` reads (each costs what the graph then cost)."""
    feed_heartbeat: float = Field(default=15.0, gt=0, le=3600)
    """Seconds a ``GET /events`` stream may stay silent before it sends a ``: keep-alive``
    comment (what keeps proxies from closing an idle stream)."""
    webhooks: str | None = None
    """Webhooks (README "Change feed"): a JSON object, or the path of a JSON file, mapping an
    agent (a token's name) to its webhooks ``[{"url", "secret", "ops"?, "project"?, ...}]``;
    unset, ``<data-dir>/webhooks.json`` is read when it exists."""
    torch_threads: int = Field(default=1, ge=0, le=256)
    """Threads torch runs the embedding model on; ``0``: torch's default, one per core. One
    keeps a write's or a recall's p95 within 2x its median when other processes are busy on
    the cores, where torch's default made the p95 ten times the median (README
    "Performance"); more only speeds up large batches (``import``) on an otherwise idle host."""
    gc_freeze: bool = True
    """Move what a loaded store, its indexes and the model hold out of the cyclic garbage
    collector's reach (``gc.freeze``) once they are loaded, and again after the store is
    rebuilt: generation-2 collections then walk only what was allocated since, instead of
    pausing every request thread 0.5-0.7 s at 100k decisions (README "Start-up and GC
    pauses"). ``false`` leaves the collector as Python sets it."""
    neighbour_pool: int = Field(default=512, ge=0, le=1_000_000)
    """How many stored items a write's neighbour scan (its ``semantic`` links and
    ``relates_to`` suggestions) rescores by exact cosine: the ones whose sign sketches are
    closest to the new item's. ``0`` scans every vector exactly (~15 ms at 100k decisions,
    against ~1 ms; README "Performance" gives how often the two differ)."""
    import_pipeline: bool = True
    """Whether ``import`` embeds the next batch of lines in a worker while the current batch is
    written (:mod:`service.usecases.prefetch`); ``false`` embeds each batch when its turn comes.
    The outcomes and the log are the same either way: this is how the import benchmark
    measures what the overlap buys."""
    judge_url: str | None = None
    """An OpenAI-compatible chat-completions endpoint (``http://host:port/v1``) asked for a second
    opinion on the contradiction judge's ``review`` pairs only; unset: never asked. When it does
    not answer within ``judge_timeout`` the local verdict stands (README "Contradiction
    detection")."""
    judge_model: str | None = None
    """The model ``judge_url`` serves (required with it)."""
    judge_key: str | None = None
    """The endpoint's bearer key (prefer ``judge_key_file``: an environment is easier to leak)."""
    judge_key_file: Path | None = None
    """A file holding the endpoint's bearer key."""
    judge_timeout: float = Field(default=5.0, gt=0, le=120)
    """Seconds one call to ``judge_url`` may take; after a failure it is left alone for 30 s."""
    gate_salience: Literal["local", "exact"] = "local"
    """How the guardrail reads a contradicted decision's salience: ``local``, from what leans
    on it only (exact, or a lower bound already past the threshold); ``exact``, one
    whole-graph PageRank per contradicting write, the behaviour before the maintained risk
    index, kept so the write benchmark can measure the difference. Both give the same verdicts."""
    malloc_arenas: int = Field(default=2, ge=0, le=1024)
    """How many malloc arenas ``serve`` lets glibc create (``mallopt(M_ARENA_MAX)``, set before
    any thread starts); ``0`` keeps glibc's default of eight per core. Each thread that
    allocates (request workers, the model, ChromaDB's) otherwise gets an arena of its own,
    whose freed memory other threads cannot reuse: two cost 8-10 MB less at 100k decisions
    with no measured latency change (README "Memory"). An explicit ``MALLOC_ARENA_MAX`` in the
    environment wins; other C libraries ignore the setting."""
    recall_pool: int = Field(default=2048, ge=0, le=1_000_000)
    """How many stored items a broad vector search (recall, hybrid and semantic
    ``queryDecisions``, unfiltered or with a filter that matches many) rescores by exact cosine:
    the ones whose sign sketches are closest to the query's. The answer depends only on the
    stored vectors, so a replay or another replica gives the same one. ``0`` asks ChromaDB's
    HNSW index instead, whose answers differ between two builds of the same vectors (README
    "Recall" compares the two)."""
    model_boot: Literal["thread", "process"] = "thread"
    """How ``serve`` loads the model while its store opens: ``thread`` (default), in a thread
    started before the store opens (the GIL lets it overlap little with the store's load, but
    a request never waits for both in turn); ``process``, in a helper process that answers
    embeddings over a pipe until the server's own copy, loaded once the store and indexes are
    open, is warm: the two loads can use two idle cores, but on a busy host the helper only
    competes for them (measured slower there; README "Start-up and GC pauses")."""
