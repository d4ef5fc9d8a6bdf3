"""The docker-compose topology (decigraph + a ChromaDB server), checked two ways.

No Docker engine runs here, so the structure of ``docker-compose.yml`` and ``Dockerfile`` is
checked statically, and the same topology is started with real processes on loopback: a
``chroma run`` server and ``decigraph serve`` with the environment the compose file gives the
decigraph service (only the Chroma host, the data directory and the port are swapped for
loopback values), started with the Dockerfile's command. Then it is exercised end to end over
HTTP, including restarts of each process.

The compose profile ``cluster`` and the Kubernetes example are checked in
``test_deploy_cluster.py``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
import yaml

from service.http.auth import load_tokens
from service.settings import Settings
from tests.e2e.test_serve import free_port
from tests.integration.test_vector_index import stop_server

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
CHROMA = Path(sys.executable).parent / "chroma"
START_TIMEOUT = 120.0
AGENT = "topology"

# -- reading the compose file ------------------------------------------------------------------

_VARIABLE = re.compile(
    r"\$(?:\$|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\})"
)


class MissingVariableError(ValueError):
    """A ``${VAR:?message}`` whose variable is unset: ``docker compose`` refuses to start."""


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose's variable substitution: ``$$``, ``${X}``, ``${X:-d}``, ``${X-d}``, ``${X:?m}``."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group("name"), match.group("op"), match.group("arg")
        current = env.get(name)
        missing = current is None or (op is not None and op.startswith(":") and current == "")
        if op in (":-", "-") and missing:
            return str(arg)
        if op in (":?", "?") and missing:
            raise MissingVariableError(f"{name}: {arg}")
        return current or ""

    return _VARIABLE.sub(substitute, value)


def load_compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def default_services(compose: Mapping[str, Any]) -> dict[str, Any]:
    """The services ``docker compose up`` starts without ``--profile``: those with no profile."""
    return {name: s for name, s in compose["services"].items() if not s.get("profiles")}


def named_volumes(service: Mapping[str, Any]) -> dict[str, str]:
    """A service's named volumes (short syntax ``name:/path[:mode]``), by name: their paths."""
    mounts = [str(v).split(":") for v in service.get("volumes") or []]
    return {m[0]: m[1] for m in mounts if not m[0].startswith((".", "/", "~", "$"))}


def service_environment(service: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """A service's ``environment`` (mapping or ``KEY=value`` list), interpolated."""
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) for item in raw)
    return {str(key): interpolate(str(value), env) for key, value in raw.items()}


def healthcheck_command(service: Mapping[str, Any]) -> list[str]:
    test = service["healthcheck"]["test"]
    assert isinstance(test, list), "write health checks in exec form"
    assert test[0] == "CMD", test
    return [str(part) for part in test[1:]]


def settings_variables() -> set[str]:
    """Every environment variable :class:`Settings` reads (its fields and their aliases)."""
    prefix = Settings.model_config.get("env_prefix", "")
    names: set[str] = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        if alias is None:
            names.add(f"{prefix}{name}".upper())
        else:
            choices = getattr(alias, "choices", [alias])
            names.update(str(choice).upper() for choice in choices)
    return names


def dockerfile_instruction(keyword: str) -> list[str]:
    """The arguments of every ``keyword`` instruction (continuation lines joined)."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    return [
        line.split(None, 1)[1].strip()
        for line in text.splitlines()
        if line.split(None, 1)[:1] == [keyword]
    ]


def dockerfile_cmd() -> list[str]:
    [cmd] = dockerfile_instruction("CMD")
    parsed = json.loads(cmd)
    assert isinstance(parsed, list)
    return [str(part) for part in parsed]


# -- static checks -----------------------------------------------------------------------------


def test_compose_services_volumes_and_health_checks() -> None:
    compose = load_compose()
    # Without --profile, exactly these two (the profile `cluster` adds its own, off by default).
    services = default_services(compose)
    assert set(services) == {"chroma", "decigraph"}
    chroma, decigraph = services["chroma"], services["decigraph"]

    # The server speaks the API of the client decigraph installs: same major.minor.
    image, _, tag = chroma["image"].rpartition(":")
    assert image == "chromadb/chroma"
    assert tag.split(".")[:2] == version("chromadb").split(".")[:2], (tag, version("chromadb"))

    # Both data directories are named volumes declared at the top level.
    used = {name for service in services.values() for name in named_volumes(service)}
    assert used == {"decigraph-data", "chroma-data"}
    assert used <= set(compose["volumes"])
    assert "chroma-data:/data" in chroma["volumes"]  # the image's persist_path
    env = service_environment(decigraph, {"CSTP_AUTH_TOKENS": "a:b"})
    assert f"decigraph-data:{env['DECIGRAPH_DATA_DIR']}" in decigraph["volumes"]

    # Health checks on both; decigraph waits for a healthy Chroma and is pointed at it.
    for service in (chroma, decigraph):
        assert healthcheck_command(service)
        assert {"interval", "timeout", "retries"} <= set(service["healthcheck"])
    assert "/api/v2/heartbeat" in " ".join(healthcheck_command(chroma))
    assert "/health" in " ".join(healthcheck_command(decigraph))
    assert decigraph["depends_on"] == {"chroma": {"condition": "service_healthy"}}
    url = urlsplit(env["DECIGRAPH_CHROMA_URL"])
    assert (url.scheme, url.hostname, url.port) == ("http", "chroma", 8000)

    # Published on loopback unless the operator says otherwise; the container port is the one
    # decigraph listens on. Chroma (no authentication in 1.x) is not published at all.
    [published] = decigraph["ports"]
    host_ip, host_port, container_port = interpolate(published, {}).split(":")
    assert host_ip == "127.0.0.1"
    assert container_port == env["DECIGRAPH_PORT"] == host_port == "8100"
    assert "ports" not in chroma


def test_compose_token_comes_from_the_environment() -> None:
    decigraph = load_compose()["services"]["decigraph"]
    raw = decigraph["environment"]
    assert re.fullmatch(r"\$\{CSTP_AUTH_TOKENS:\?[^}]+\}", raw["CSTP_AUTH_TOKENS"])
    with pytest.raises(MissingVariableError, match="CSTP_AUTH_TOKENS"):
        service_environment(decigraph, {})
    with pytest.raises(MissingVariableError, match="CSTP_AUTH_TOKENS"):
        service_environment(decigraph, {"CSTP_AUTH_TOKENS": ""})
    # No secret is written into the file: every auth-ish value is a substitution.
    for key, value in raw.items():
        if re.search("TOKEN|SECRET|PASSWORD|KEY", key):
            assert str(value).startswith("${"), f"{key} is hard-coded in {COMPOSE.name}"
    env = service_environment(
        decigraph, {"CSTP_AUTH_TOKENS": "ops:s3cret-0123456789,ci:t0ken-0123456789"}
    )
    assert env["CSTP_AUTH_TOKENS"] == "ops:s3cret-0123456789,ci:t0ken-0123456789"


def test_compose_variables_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    named = set(re.findall(r"\b(?:DECIGRAPH|CSTP)_[A-Z0-9_]+\b", COMPOSE.read_text()))
    unknown = named - settings_variables()
    assert not unknown, f"{COMPOSE.name} names variables Settings does not read: {unknown}"

    # And Settings accepts exactly what the decigraph service gets.
    decigraph = load_compose()["services"]["decigraph"]
    env = service_environment(decigraph, {"CSTP_AUTH_TOKENS": "ops:s3cret-0123456789"})
    for key in list(os.environ):
        if key.startswith(("DECIGRAPH_", "CSTP_")):
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    assert settings.chroma_url == "http://chroma:8000"
    assert settings.data_dir == Path("/data")
    assert settings.port == 8100
    assert load_tokens(settings).agent_for("Bearer s3cret-0123456789") == "ops"


def test_dockerfile_builds_a_cpu_only_non_root_image() -> None:
    text = DOCKERFILE.read_text()
    stages = dockerfile_instruction("FROM")
    assert stages[-1].split()[0] == "python:3.11-slim"
    assert any(stage.startswith("node:") for stage in stages)
    assert "https://download.pytorch.org/whl/cpu" in text
    assert "-c constraints.txt" in text
    assert "torch==2.13.0+cpu" in (ROOT / "constraints.txt").read_text()
    installs = [line for line in dockerfile_instruction("RUN") if "pip install" in line]
    assert any(re.search(r"pip install --no-deps \.(\s|$)", line) for line in installs)
    assert not any(re.search(r"pip install .*(-e|--editable)\b", line) for line in installs)
    assert "npm ci --prefix service/ui" in text
    assert "node_modules/d3/dist" in text
    [user] = dockerfile_instruction("USER")
    assert user not in ("root", "0")
    assert "/data" in " ".join(dockerfile_instruction("VOLUME"))
    assert dockerfile_cmd()[:2] == ["decigraph", "serve"]
    assert "--host" in dockerfile_cmd()
    assert "0.0.0.0" in dockerfile_cmd()

    # The image's HEALTHCHECK is the compose health check, and neither needs curl.
    [healthcheck] = dockerfile_instruction("HEALTHCHECK")
    image_check = json.loads(healthcheck.split("CMD", 1)[1])
    compose_check = healthcheck_command(load_compose()["services"]["decigraph"])
    assert image_check[:2] == compose_check[:2] == ["python", "-c"]
    assert image_check[2].replace(" ", "") == compose_check[2].replace(" ", "")


# -- the topology with real processes ----------------------------------------------------------


class Topology:
    """``chroma run`` + ``decigraph serve`` on loopback, configured like docker-compose.yml."""

    def __init__(self, workdir: Path, token: str) -> None:
        compose = load_compose()
        self.chroma_service = compose["services"]["chroma"]
        self.decigraph_service = compose["services"]["decigraph"]
        self.workdir = workdir
        self.chroma_path = workdir / "chroma-data"  # the chroma-data volume
        self.data_dir = workdir / "decigraph-data"  # the decigraph-data volume
        self.chroma_port = free_port()
        self.port = free_port()
        self.token = token
        self.chroma: subprocess.Popen[bytes] | None = None
        self.decigraph: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.http = httpx.Client(trust_env=False, timeout=60)

        env = service_environment(self.decigraph_service, {"CSTP_AUTH_TOKENS": f"{AGENT}:{token}"})
        # The three values that differ between the compose network and loopback.
        chroma_url = urlsplit(env["DECIGRAPH_CHROMA_URL"])
        assert chroma_url.hostname == "chroma", "decigraph must reach the chroma service"
        env["DECIGRAPH_CHROMA_URL"] = urlunsplit(
            chroma_url._replace(netloc=f"127.0.0.1:{self.chroma_port}")
        )
        env["DECIGRAPH_DATA_DIR"] = str(self.data_dir)
        env["DECIGRAPH_PORT"] = str(self.port)
        self.service_env = env
        self.collection = env.get("DECIGRAPH_CHROMA_COLLECTION", "decigraph")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def chroma_url(self) -> str:
        return f"http://127.0.0.1:{self.chroma_port}"

    def process_env(self) -> dict[str, str]:
        """This machine's environment without any decigraph settings, plus the service's."""
        base = {k: v for k, v in os.environ.items() if not k.startswith(("DECIGRAPH_", "CSTP_"))}
        base["NO_PROXY"] = base["no_proxy"] = "127.0.0.1,localhost"
        return {**base, **self.service_env}

    # -- chroma ----------------------------------------------------------------------------
    def chroma_health_command(self) -> list[str]:
        """The compose health check, aimed at the loopback port instead of the container's."""
        command = healthcheck_command(self.chroma_service)
        [url] = [part for part in command if part.startswith("http")]
        parts = urlsplit(url)
        assert (parts.hostname, parts.port) in (("localhost", 8000), ("127.0.0.1", 8000)), url
        here = urlunsplit(parts._replace(netloc=f"127.0.0.1:{self.chroma_port}"))
        return [here if part == url else part for part in command]

    def chroma_healthy(self) -> bool:
        command = self.chroma_health_command()
        if command[0] == "curl" and shutil.which("curl") is None:  # pragma: no cover
            [url] = [part for part in command if part.startswith("http")]
            with suppress(httpx.TransportError):
                return self.http.get(url, timeout=2).status_code == 200
            return False
        env = {**os.environ, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        return subprocess.run(command, capture_output=True, env=env, check=False).returncode == 0

    def start_chroma(self) -> None:
        command = [str(CHROMA), "run", "--path", str(self.chroma_path), "--host", "127.0.0.1"]
        command += ["--port", str(self.chroma_port)]
        with (self.workdir / "chroma.log").open("ab") as log:
            self.chroma = subprocess.Popen(command, stdout=log, stderr=log)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.chroma.poll() is not None:
                raise RuntimeError(f"chroma exited: {(self.workdir / 'chroma.log').read_text()}")
            if self.chroma_healthy():
                return
            time.sleep(0.1)
        raise RuntimeError("chroma did not become healthy")

    def stop_chroma(self) -> None:
        assert self.chroma is not None
        stop(self.chroma)
        self.chroma = None

    # -- decigraph -------------------------------------------------------------------------
    def decigraph_command(self) -> list[str]:
        """The Dockerfile's CMD, run from this checkout and listening on loopback."""
        cmd = dockerfile_cmd()
        assert cmd[0] == "decigraph"
        args = ["127.0.0.1" if part == "0.0.0.0" else part for part in cmd[1:]]
        return [sys.executable, "-m", "service.cli", *args]

    def health_check(self) -> subprocess.CompletedProcess[bytes]:
        """The compose health check, run as in the container (``python`` is the venv's)."""
        command = healthcheck_command(self.decigraph_service)
        assert command[0] == "python"
        return subprocess.run(
            [sys.executable, *command[1:]], env=self.process_env(), capture_output=True, check=False
        )

    def start_decigraph(self) -> None:
        """Start ``decigraph serve`` (its working directory is not the checkout, as in the
        image: everything comes from the environment) and wait for /health."""
        self.starts += 1
        with (self.workdir / f"decigraph-{self.starts}.log").open("wb") as log:
            self.decigraph = subprocess.Popen(
                self.decigraph_command(),
                cwd=self.workdir,
                env=self.process_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.decigraph.poll() is not None:
                raise RuntimeError(f"decigraph exited: {self.decigraph_log()}")
            with suppress(httpx.TransportError):
                if self.http.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"decigraph did not answer: {self.decigraph_log()}")

    def stop_decigraph(self) -> int:
        assert self.decigraph is not None
        self.decigraph.send_signal(signal.SIGTERM)  # what `docker compose stop` sends
        code = self.decigraph.wait(timeout=60)
        self.decigraph = None
        return code

    def decigraph_log(self) -> str:
        return (self.workdir / f"decigraph-{self.starts}.log").read_text(errors="replace")

    def cli(self, *args: str) -> dict[str, Any]:
        """``decigraph <args> --json`` with the service's environment."""
        done = subprocess.run(
            [sys.executable, "-m", "service.cli", *args, "--json"],
            cwd=ROOT,
            env=self.process_env(),
            capture_output=True,
            check=False,
            timeout=120,
        )
        assert done.returncode in (0, 1), done.stderr.decode()
        result = json.loads(done.stdout)
        assert isinstance(result, dict)
        return result

    # -- calls -----------------------------------------------------------------------------
    def post(self, body: Any, token: str | None = None) -> httpx.Response:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return self.http.post(f"{self.url}/cstp", json=body, headers=headers)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """A JSON-RPC call with the token; the whole response document."""
        body = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
        response = self.post(body, self.token)
        assert response.status_code == 200, response.text
        document = response.json()
        assert isinstance(document, dict)
        return document

    def result(self, method: str, **params: Any) -> dict[str, Any]:
        document = self.call(method, **params)
        assert "error" not in document, (method, document)
        result = document["result"]
        assert isinstance(result, dict)
        return result

    def recall_ids(self, query: str, limit: int = 10) -> list[str]:
        return [hit["id"] for hit in self.result("recall", query=query, limit=limit)["results"]]

    def health(self) -> dict[str, Any]:
        response = self.http.get(f"{self.url}/health")
        assert response.status_code == 200
        body = response.json()
        assert isinstance(body, dict)
        return body

    # -- the Chroma server, asked directly ---------------------------------------------------
    def chroma_collection(self) -> tuple[set[str], dict[str, Any]]:
        """The ids and the metadata of decigraph's collection, read from the server itself."""
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        client = chromadb.HttpClient(
            host="127.0.0.1",
            port=self.chroma_port,
            settings=ChromaSettings(anonymized_telemetry=False),
        )
        try:
            collection = client.get_collection(self.collection)
            ids = set(collection.get(include=[])["ids"])
            assert collection.count() == len(ids)
            return ids, dict(collection.metadata or {})
        finally:
            with suppress(Exception):
                client.close()  # type: ignore[attr-defined]

    def close(self) -> None:
        for process in (self.decigraph, self.chroma):
            if process is not None:
                stop(process)
        self.http.close()


def stop(process: subprocess.Popen[bytes]) -> None:
    stop_server(process, timeout=30)  # decigraph flushes and snapshots before it exits


@contextmanager
def topology(workdir: Path) -> Iterator[Topology]:
    running = Topology(workdir, secrets.token_hex(16))
    try:
        yield running
    finally:
        running.close()


@pytest.mark.skipif(not CHROMA.exists(), reason="the chroma CLI is not installed")
def test_topology_end_to_end(tmp_path: Path) -> None:
    with topology(tmp_path) as top:
        # -- up: chroma first (decigraph depends on it being healthy), then decigraph ----------
        top.start_chroma()
        top.start_decigraph()
        assert top.health_check().returncode == 0, top.health_check().stderr
        assert top.health()["status"] == "ok"

        # -- auth: the token from the environment, and nothing else ---------------------------
        probe = {"jsonrpc": "2.0", "id": 1, "method": "cstp.getStats", "params": {}}
        for token in (None, "not-the-token", f"{AGENT}:{top.token}"):
            refused = top.post(probe, token)
            assert refused.status_code == 401, (token, refused.text)
            assert refused.headers["www-authenticate"].startswith("Bearer")
        assert top.post(probe, top.token).status_code == 200

        # -- writes ---------------------------------------------------------------------------
        ledger = top.result(
            "recordDecision",
            decision="Use PostgreSQL for the payments ledger",
            confidence=0.9,
            category="architecture",
            stakes="high",
        )["id"]
        pooling = top.result(
            "recordDecision",
            decision="Put PgBouncer in front of PostgreSQL to pool connections",
            category="architecture",
        )["id"]
        timeout = top.result(
            "remember", text="Checkout timed out under load: the database ran out of connections"
        )["id"]
        rollout = top.result("remember", text="The app rollout slipped to next quarter")["id"]
        ids = {ledger, pooling, timeout, rollout}
        assert len(ids) == 4
        stats = top.result("getStats")
        assert stats["total"] == 2
        assert stats["byAgent"] == {AGENT: 2}  # recorded by the agent the token maps to

        # -- reads: recall goes through the Chroma server -------------------------------------
        found = top.recall_ids("why did checkout time out?")
        assert found[0] == timeout, found
        assert pooling in top.recall_ids("connection pooling for PostgreSQL")
        assert ledger in top.recall_ids("which database holds the payments ledger")
        semantic = top.result(
            "queryDecisions", query="database for money", retrievalMode="semantic", limit=5
        )
        assert ledger in json.dumps(semantic)

        # The vectors are really in the server, with the watermark at the log head.
        events = top.health()["events"]
        stored, metadata = top.chroma_collection()
        assert stored == ids
        assert metadata["decigraph_watermark_seq"] == events
        assert any(top.chroma_path.iterdir())  # the server's files, in its volume
        assert not (top.data_dir / "chroma").exists(), "decigraph must not embed its own Chroma"

        # -- restart decigraph; Chroma keeps running ------------------------------------------
        assert top.stop_decigraph() == 0
        # What the next start relies on to re-embed nothing: every vector present and fresh,
        # the watermark at the head (checked against the server, without loading the model).
        audit = top.cli("verify", "--indexes")
        assert audit["ok"], audit["problems"]
        assert audit["indexesChecked"]
        assert audit["events"] == events
        assert (top.data_dir / "index" / "memory.pickle").exists()
        top.start_decigraph()
        assert top.health()["events"] == events
        assert top.recall_ids("why did checkout time out?")[0] == timeout
        assert top.result("getDecision", id=pooling)["found"]
        assert top.chroma_collection()[0] == ids

        # -- restart Chroma; decigraph keeps running ------------------------------------------
        top.stop_chroma()
        # decigraph stays alive (its own state is intact): vector search answers exactly from
        # the in-memory embedding matrix, which holds every vector.
        assert top.health()["status"] == "ok"
        assert top.recall_ids("why did checkout time out?")[0] == timeout
        # Writes go on: the log is the source of truth and the vector write waits in the queue.
        queued = top.result("remember", text="Checkout recovered after pooling was enabled")["id"]
        assert queued in top.recall_ids("did checkout recover?")
        top.start_chroma()
        # Same path: same collection and vectors; decigraph reconnects without a restart and
        # sends what it queued.
        assert top.recall_ids("why did checkout time out?")[0] == timeout
        assert queued in top.recall_ids("did checkout recover?")
        assert top.chroma_collection()[0] == ids | {queued}

        # -- down ------------------------------------------------------------------------------
        assert top.stop_decigraph() == 0
        final = top.cli("verify", "--indexes")
        assert final["ok"], final["problems"]


@pytest.mark.skipif(not CHROMA.exists(), reason="the chroma CLI is not installed")
def test_writes_queued_during_a_chroma_outage_survive_a_failed_flush(tmp_path: Path) -> None:
    """A flush that fails while Chroma is down must keep its queue for the next attempt."""
    from graph.drafts import MemoryDraft
    from graph.store import DecisionStore, StoreOptions
    from retrieval.index import DualIndex, audit_vectors
    from retrieval.vector import ChromaVectorIndex, VectorIndexError
    from retrieval.writes import remember
    from tests.support.fakes import HashEmbedder

    with topology(tmp_path) as top:
        top.start_chroma()
        store = DecisionStore.open(tmp_path / "data", StoreOptions(fsync="never"))
        index = DualIndex.open(store, HashEmbedder(), ChromaVectorIndex.http(top.chroma_url))
        try:
            remember(index, MemoryDraft(text="before the outage", source="ops"), "t")
            index.flush()
            top.stop_chroma()
            remember(index, MemoryDraft(text="during the outage", source="ops"), "t")
            with pytest.raises(VectorIndexError):
                index.flush()  # what any recall does first
            top.start_chroma()
            remember(index, MemoryDraft(text="after the outage", source="ops"), "t")
            index.flush()
            assert audit_vectors(store, index.vectors) == []
        finally:
            index.close()
            store.close()
