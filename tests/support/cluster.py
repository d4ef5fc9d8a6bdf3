"""Several ``decigraph serve`` replicas on one shared PostgreSQL event log, for the cluster tests.

:class:`Replica` is one ``decigraph serve --event-store URL`` process with a data directory of
its own (its snapshot and indexes), listening on a free loopback port (another one if that
was taken meanwhile), its output kept in a file whose tail goes into assertion messages. It
can be SIGKILLed and started again on the same directory. :func:`running_replicas` starts
several at once (the model loads in each) and kills whatever is left when the block ends,
however it ends. :class:`Writers` are threads recording decisions on replicas and keeping
every answer; :func:`logged_events` reads the log straight from the database.

:class:`DecisionTexts` hands out realistic decision statements (billing, infrastructure, ML,
security, hiring...), each once, to any number of writer threads.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from graph.events import Event, touched_ids
from tests.support.pgcluster import PG_USER, PgCluster, PgServer

ROOT = Path(__file__).resolve().parents[2]
AGENT = "cluster-agent"
TOKEN = "cluster-token-0123456789abcdef"

#: JSON-RPC error codes of the shared log, all retryable: the event store unavailable or busy
#: (nothing written), the commit outcome unknown (look the event up), a replica not caught up.
UNAVAILABLE, OUTCOME_UNKNOWN, NOT_CAUGHT_UP = -32011, -32012, -32013
RETRYABLE = frozenset({UNAVAILABLE, OUTCOME_UNKNOWN, NOT_CAUGHT_UP})
#: A guardrail refused the write (nothing written): never an acknowledged write.
GUARDRAIL_BLOCKED = -32004
VERSION_CONFLICT = -32009


@dataclass(frozen=True)
class Reply:
    """One JSON-RPC answer: ``result`` or ``error`` (``transport`` when no answer came at all:
    the replica died or the call timed out)."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    transport: str | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None

    @property
    def code(self) -> int | None:
        return None if self.error is None else int(self.error["code"])

    @property
    def data(self) -> dict[str, Any]:
        data = (self.error or {}).get("data")
        return dict(data) if isinstance(data, dict) else {}

    def unwrap(self) -> dict[str, Any]:
        assert self.result is not None, f"expected a result, got {self}"
        return self.result

    def __str__(self) -> str:
        if self.result is not None:
            return f"result {json.dumps(self.result)[:300]}"
        if self.error is not None:
            return f"error {json.dumps(self.error)[:500]}"
        return f"no answer ({self.transport})"


class Replica:
    """One ``decigraph serve`` on the shared log (see the module docstring)."""

    def __init__(self, name: str, base: Path, event_store: str, env: dict[str, str]) -> None:
        self.name = name
        self.data_dir = base / name
        self.log_path = base / f"{name}.stderr"
        self.event_store = event_store
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.url = ""
        self.http = httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"})
        self._ids = itertools.count(1)

    # -- the process

    def start(self) -> None:
        """Start the process (not waiting for it: see :meth:`wait_up`)."""
        assert self.proc is None or self.proc.poll() is not None, f"{self.name} is running"
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "service.cli", "serve", "--data-dir", str(self.data_dir)]
        command += ["--port", str(self.port), "--event-store", self.event_store]
        with self.log_path.open("ab") as log:
            log.write(f"--- start {time.strftime('%H:%M:%S')} ---\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_up(self, timeout: float = 120) -> None:
        """Until this process answers ``/health`` (started again on another port if the one
        it was given was taken meanwhile)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if "cannot listen" in self.tail(1):
                    self.start()
                    continue
                raise AssertionError(
                    f"{self.name} exited with {self.proc.returncode}\n{self.tail()}"
                )
            with contextlib.suppress(httpx.TransportError):
                if self.http.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.1)
        raise AssertionError(f"{self.name} did not answer /health in {timeout} s\n{self.tail()}")

    def ready(self) -> tuple[int, dict[str, Any]]:
        """``GET /ready``: the status code and body (599 and ``{}`` when nothing answered)."""
        try:
            response = self.http.get(f"{self.url}/ready", timeout=5)
        except httpx.TransportError as exc:
            return 599, {"transport": repr(exc)}
        return response.status_code, dict(response.json())

    def wait_ready(self, timeout: float = 120) -> dict[str, Any]:
        """Until ``/ready`` answers 200; its body."""
        self.wait_up(timeout)
        deadline = time.monotonic() + timeout
        status, body = 0, dict[str, Any]()
        while time.monotonic() < deadline:
            status, body = self.ready()
            if status == 200:
                return body
            time.sleep(0.1)
        raise AssertionError(
            f"{self.name} /ready: {status} {body} after {timeout} s\n{self.tail()}"
        )

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig``; with SIGKILL, return once the process is gone."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        if sig == signal.SIGKILL:
            self.proc.wait(timeout=60)

    def close(self) -> None:
        """Kill the process if it runs, and close the HTTP client."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)
        self.http.close()

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            text = []
        return f"--- {self.log_path} (last {len(text)} lines) ---\n" + "\n".join(text)

    # -- JSON-RPC

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Reply:
        """``cstp.<method>``; a :class:`Reply` whatever happens (never raises for the server's
        sake: a dead replica is a ``transport`` reply)."""
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": f"cstp.{method}"}
        body["params"] = params or {}
        try:
            response = self.http.post(f"{self.url}/cstp", json=body, timeout=timeout)
        except httpx.TransportError as exc:
            return Reply(transport=f"{type(exc).__name__}: {exc}")
        assert response.status_code == 200, (self.name, method, response.status_code, response.text)
        document = response.json()
        if "error" in document:
            return Reply(error=dict(document["error"]))
        return Reply(result=dict(document["result"]))

    def ok(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 30
    ) -> dict[str, Any]:
        reply = self.call(method, params, timeout)
        assert reply.ok, f"{self.name} {method} {params}: {reply}\n{self.tail()}"
        return reply.unwrap()

    def __repr__(self) -> str:
        return f"<Replica {self.name} {self.url} pid={self.proc.pid if self.proc else None}>"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def replica_env(**extra: str) -> dict[str, str]:
    """The environment of a replica: ours without any ``DECIGRAPH_*``/``PG*`` setting, one token,
    plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DECIGRAPH_", "PG", "CSTP_"))}
    env["CSTP_AUTH_TOKENS"] = f"{AGENT}:{TOKEN}"
    env.update(extra)
    return env


@contextlib.contextmanager
def running_replicas(
    base: Path, event_store: str, names: Sequence[str], **extra_env: str
) -> Iterator[list[Replica]]:
    """Replicas ``names`` on ``event_store``, started together, yielded once every one is ready
    (model warm, caught up); all killed when the block ends."""
    replicas = [Replica(name, base, event_store, replica_env(**extra_env)) for name in names]
    try:
        for replica in replicas:
            replica.start()
        for replica in replicas:
            replica.wait_ready()
        yield replicas
    finally:
        for replica in replicas:
            replica.close()


def multi_host_url(cluster: PgCluster) -> str:
    """The database on both servers, libpq picking the one that accepts writes."""
    hosts = f"127.0.0.1:{cluster.primary.port},127.0.0.1:{cluster.standby.port}"
    return f"postgresql://{PG_USER}@{hosts}/{cluster.dbname}?target_session_attrs=read-write"


def converged(replicas: Sequence[Replica], timeout: float = 60) -> list[dict[str, Any]]:
    """Until every replica's ``getReplicaStatus`` reports the same seq, last hash and graph hash,
    at the log's head; their statuses."""
    deadline = time.monotonic() + timeout
    statuses: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        replies = [r.call("getReplicaStatus", {}, timeout=10) for r in replicas]
        statuses = [reply.result or {"reply": str(reply)} for reply in replies]
        keys = {(s.get("seq"), s.get("lastHash"), s.get("graphHash")) for s in statuses}
        ok = all(reply.ok for reply in replies) and len(keys) == 1
        if ok and all(s["logHead"] == s["seq"] for s in statuses):
            return statuses
        time.sleep(0.2)
    shown = "\n".join(f"{r.name}: {s}" for r, s in zip(replicas, statuses, strict=True))
    raise AssertionError(f"replicas did not converge in {timeout} s:\n{shown}")


def verify_log(event_store: str) -> dict[str, Any]:
    """``decigraph verify --event-store URL --json`` (a data directory that does not exist):
    asserts it passes; its report."""
    with tempfile.TemporaryDirectory() as scratch:
        absent = Path(scratch) / "absent"
        command = [sys.executable, "-m", "service.cli", "verify", "--data-dir", str(absent)]
        done = subprocess.run(
            [*command, "--event-store", event_store, "--json"],
            cwd=ROOT,
            env=replica_env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, f"verify exited {done.returncode}:\n{done.stdout}{done.stderr}"
    report = json.loads(done.stdout)
    assert report["ok"] is True, report
    return dict(report)


# -- realistic decisions -----------------------------------------------------------------------

#: One decision per entry, ``category: statement`` (an indented line continues the entry).
_DECISION_LINES = """
architecture: Generate invoices in a nightly batch per billing region instead of on every usage
    event
architecture: Store monetary amounts as integer minor units with an ISO 4217 currency code
integration: Retry failed card captures with the payment provider three times over 48 hours
process: Credit notes above 5,000 EUR need a second approver from finance
architecture: Prorate mid-cycle plan upgrades to the day, never to the hour
integration: Send dunning emails through the transactional mail service, not the marketing one
tooling: Reconcile the billing ledger against the bank export every morning at 06:00 UTC
architecture: Keep tax calculation in a dedicated service that owns the VAT rate tables
process: Freeze pricing changes during the last five business days of each quarter
integration: Accept SEPA direct debit for annual plans in the eurozone
architecture: Run the usage metering pipeline on Kafka with a seven-day retention
architecture: Move the staging Kubernetes cluster to spot instances with a 30% on-demand floor
tooling: Manage DNS records with Terraform in the infra-live repository
architecture: Put the public API behind a regional load balancer in eu-west-1 and us-east-1
process: Patch node images on the second Tuesday of every month
tooling: Replace the hand-written Helm charts with Kustomize overlays per environment
architecture: Keep PostgreSQL backups for 35 days with point-in-time recovery enabled
architecture: Serve static assets from the CDN with immutable cache headers and hashed names
tooling: Pin base container images by digest and refresh them weekly through Renovate
architecture: Run Redis as a managed service with a replica in a second availability zone
process: Page the on-call engineer only for alerts that have a runbook link
tooling: Collect traces with OpenTelemetry and sample one request in twenty in production
architecture: Give every service its own database schema and no cross-schema joins
architecture: Retrain the churn model monthly on a rolling twelve-month window
tooling: Track experiments and model artifacts in MLflow with the S3 backend
architecture: Serve the ranking model with ONNX Runtime on CPU instead of a GPU fleet
process: Require a shadow deployment of two weeks before a new fraud model takes traffic
architecture: Compute recommendation features in a nightly Spark job and cache them in Redis
process: Label a stratified sample of 2,000 support tickets per quarter for the intent
    classifier
architecture: Use sentence embeddings from MiniLM for semantic search over the help center
process: Roll back any model whose precision drops more than three points in the canary
tooling: Version training datasets with DVC next to the feature code
architecture: Quantise the on-device keyboard model to int8 to stay under 20 MB
process: Keep a human in the loop for credit-limit decisions the model scores between 0.4 and
    0.6
security: Rotate database credentials every 30 days through Vault dynamic secrets
security: Require hardware security keys for production console access
security: Encrypt customer exports at rest with per-tenant keys in the KMS
security: Block outbound traffic from build runners except to the package mirror
security: Run dependency vulnerability scans on every pull request and fail on critical findings
security: Expire API tokens after 90 days and warn their owners two weeks before
security: Log every admin impersonation to the append-only audit trail
security: Terminate TLS 1.0 and 1.1 at the edge and allow only TLS 1.2 or newer
security: Store session cookies with SameSite=Lax, Secure and HttpOnly
security: Give contractors access through a separate identity provider group that expires
security: Scan container images with Trivy before they are pushed to the registry
process: Run a structured interview loop of four sessions for senior backend candidates
process: Send a take-home exercise capped at three hours only when the candidate opts in
process: Pair every new engineer with an onboarding buddy for their first six weeks
process: Publish salary bands for every engineering level on the internal wiki
process: Hire two site reliability engineers in the Lisbon office this half
process: Debrief interview panels within 24 hours using a written scorecard first
process: Open the data engineering role to fully remote candidates in European time zones
process: Give hiring managers a budget for one relocation package per quarter
architecture: Adopt server-side rendering for the marketing site with incremental regeneration
tooling: Move the web app's build from webpack to Vite
architecture: Keep feature flags in LaunchDarkly and remove each one within 60 days of full
    rollout
process: Ship the mobile apps on a two-week release train with a code freeze on Thursdays
architecture: Cache the product catalogue on the mobile client for offline browsing
tooling: Write new mobile screens in SwiftUI and Jetpack Compose
architecture: Paginate list endpoints with opaque cursors rather than offsets
integration: Publish order events to partners through signed webhooks with retries for 72 hours
integration: Import leads from the CRM every fifteen minutes through its bulk API
integration: Sync support tickets with Jira through the vendor's official connector
architecture: Version the public REST API in the URL path and support two versions at a time
integration: Use the shipping aggregator's rate API instead of integrating carriers one by one
tooling: Load warehouse tables with dbt models reviewed like application code
architecture: Partition the events table in the warehouse by day and cluster it by tenant
process: Delete raw clickstream data after 13 months to meet the retention policy
architecture: Land CDC streams from the orders database in the lakehouse through Debezium
process: Give analysts read-only access to production replicas through a masked view layer
tooling: Schedule data pipelines with Dagster and alert on freshness per asset
process: Answer enterprise support tickets within four business hours
process: Route billing questions from the chat widget straight to the finance support queue
process: Hold a blameless postmortem within five days of every customer-facing incident
process: Review the error budget of each service in the monthly operations meeting
tooling: Run load tests with k6 against staging before every major release
process: Keep the public status page updated at least every 30 minutes during an outage
architecture: Send product analytics through a first-party collection endpoint
process: Ask for explicit consent before enabling session replay in the EU
process: Sign data processing agreements with every vendor that touches customer data
architecture: Keep EU customer data in Frankfurt and never replicate it outside the EU
process: Review open source licences of new dependencies and refuse AGPL in the product
tooling: Enforce formatting with ruff and pre-commit hooks in every Python repository
tooling: Build the monorepo with Bazel remote caching on the CI runners
process: Require one approving review and green CI before merging to main
tooling: Run end-to-end browser tests with Playwright on every merge to main
process: Deprecate the v1 SDKs with six months' notice and migration guides
architecture: Use a transactional outbox to publish domain events from the orders service
architecture: Make every payment webhook handler idempotent on the provider's event id
architecture: Run search on OpenSearch with one index per tenant tier
integration: Send SMS one-time codes through two providers with automatic failover
architecture: Store uploaded documents in object storage with a 30-day soft delete
process: Give each squad a quarterly budget of two weeks for technical debt
tooling: Generate API clients from the OpenAPI document in CI
architecture: Rate limit the public API per token with a token bucket in the gateway
process: Offer a 14-day free trial without asking for a card on the starter plan
integration: Bill marketplace customers through the cloud provider's private offers
architecture: Evaluate the search relevance model offline on the judged query set before launch
process: Retire the legacy reporting cluster after moving its dashboards to the warehouse
security: Require signed commits on the release branches
security: Keep production secrets out of environment files and read them from the secret store
    at start
tooling: Alert on p99 latency of checkout above 800 ms for ten minutes
process: Rotate the incident commander role weekly among senior engineers
architecture: Compress API responses with Brotli for clients that accept it
integration: Verify customer VAT numbers against VIES when an invoice address changes
architecture: Shard the notification service by tenant id across four Postgres clusters
tooling: Profile the recommendation service continuously with Pyroscope
process: Interview for the ML platform lead with a system design session on feature stores
architecture: Distill the support-answer model into a smaller student model for latency
security: Review IAM policies for unused permissions every quarter with access analyzer
process: Audit the payment flow for PCI DSS scope before adding a new checkout page
architecture: Back the job queue with PostgreSQL SKIP LOCKED instead of a separate broker
tooling: Keep architecture decision records in the docs folder of each repository
process: Let customers export their invoices as CSV and PDF from the billing portal
architecture: Serve map tiles from a self-hosted tile server cached at the CDN
integration: Pull exchange rates from the central bank feed once a day for multi-currency
    pricing
"""


def _parse(lines: str) -> tuple[tuple[str, str], ...]:
    entries: list[str] = []
    for line in lines.strip().splitlines():
        if line.startswith(" "):
            entries[-1] += " " + line.strip()
        else:
            entries.append(line)
    return tuple((c.strip(), t.strip()) for c, _, t in (e.partition(":") for e in entries))


_DECISIONS = _parse(_DECISION_LINES)


@dataclass
class DecisionTexts:
    """Realistic decisions, each handed out once (thread-safe); after the pool, the same ones
    again for another team (``... (platform team, Q3)``), so texts never repeat."""

    _next: Iterator[tuple[str, str]] = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._next = ((category, text + team) for team in _TEAMS for category, text in _DECISIONS)

    def take(self) -> dict[str, Any]:
        """The params of one ``recordDecision``."""
        with self._lock:
            found = next(self._next, None)
        if found is None:
            raise AssertionError(f"all {len(_TEAMS) * len(_DECISIONS)} decision texts used")
        category, text = found
        return {"decision": text, "confidence": 0.8, "category": category}


_TEAMS = (
    "",
    " for the payments team",
    " for the growth team",
    " for the platform team",
    " in the EU region",
    " in the US region",
    " for the mobile squad",
    " for the data team",
)


# -- writers -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """One ``recordDecision`` a writer sent: to which replica, what, and what came back."""

    replica: str
    params: dict[str, Any]
    reply: Reply
    started: float  # time.monotonic()
    seconds: float

    @property
    def acknowledged(self) -> bool:
        """A result with a ``seq``: the write is durable and must never be lost."""
        return self.reply.ok and "seq" in (self.reply.result or {})


class Writers:
    """``per_replica`` threads per target recording decisions (a pause between writes) until
    :meth:`stop`. A thread whose replica stops answering (a transport error) ends when
    ``stop_on_transport``; every attempt is kept, in order of completion."""

    def __init__(
        self,
        targets: Sequence[Replica],
        texts: DecisionTexts,
        *,
        per_replica: int = 1,
        pause: float = 0.05,
        stop_on_transport: bool = True,
    ) -> None:
        self.texts = texts
        self.pause = pause
        self.stop_on_transport = stop_on_transport
        self.attempts: list[Attempt] = []
        self.failures: list[BaseException] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(r,), name=f"writer-{r.name}-{n}", daemon=True)
            for r in targets
            for n in range(per_replica)
        ]

    def _run(self, replica: Replica) -> None:
        try:
            while not self._stop.is_set():
                params = self.texts.take()
                started = time.monotonic()
                reply = replica.call("recordDecision", params, timeout=30)
                attempt = Attempt(replica.name, params, reply, started, time.monotonic() - started)
                with self._lock:
                    self.attempts.append(attempt)
                if reply.transport is not None and self.stop_on_transport:
                    return
                self._stop.wait(self.pause if reply.ok else max(self.pause, 0.1))
        except BaseException as exc:  # reported by stop(): a thread must not fail silently
            self.failures.append(exc)

    def start(self) -> Writers:
        for thread in self._threads:
            thread.start()
        return self

    def acknowledged(self) -> list[Attempt]:
        with self._lock:
            return [a for a in self.attempts if a.acknowledged]

    def wait_acknowledged(self, count: int, timeout: float, since: float = 0.0) -> None:
        """Until ``count`` writes started after ``since`` were acknowledged."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(a.started >= since for a in self.acknowledged()) >= count:
                return
            time.sleep(0.02)
        raise AssertionError(f"not {count} acknowledged writes in {timeout} s: {self.summary()}")

    def stop(self) -> list[Attempt]:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in self._threads), "a writer thread is stuck"
        assert not self.failures, self.failures
        return list(self.attempts)

    def summary(self) -> str:
        with self._lock:
            attempts = list(self.attempts)
        kinds: dict[str, int] = {}
        for a in attempts:
            kind = "ok" if a.reply.ok else str(a.reply.code or "transport")
            kinds[kind] = kinds.get(kind, 0) + 1
        return f"{len(attempts)} writes: {kinds}"


# -- the log in the database -------------------------------------------------------------------


@dataclass(frozen=True)
class LoggedEvent:
    seq: int
    event_id: str
    op: str
    node_ids: tuple[str, ...]
    line: str


def logged_events(server: PgServer, dbname: str) -> dict[int, LoggedEvent]:
    """Every event in ``decigraph.events`` of ``dbname`` on ``server``, by seq."""
    rows = server.query("SELECT seq, id, line FROM decigraph.events ORDER BY seq", dbname=dbname)
    found = {}
    for seq, event_id, line in rows:
        event = Event.from_line(bytes(line))
        assert (event.seq, event.id) == (seq, event_id), (seq, event_id, bytes(line)[:200])
        found[int(seq)] = LoggedEvent(
            int(seq), str(event_id), event.op.value, tuple(touched_ids(event.payload)),
            bytes(line).decode(),
        )  # fmt: skip
    return found
