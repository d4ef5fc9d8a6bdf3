"""The compose profile ``cluster`` and the Kubernetes example under ``deploy/``, checked
statically (no Docker engine or cluster runs here): PostgreSQL with a synchronous standby,
three decigraph replicas on the shared log, the load balancer, and the manifests."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from service.http.auth import load_tokens
from service.settings import Settings
from tests.e2e.test_topology import (
    DEPLOY,
    KUBERNETES,
    ROOT,
    default_services,
    healthcheck_command,
    interpolate,
    load_compose,
    named_volumes,
    service_environment,
    settings_variables,
)

# -- static checks: the compose profile `cluster` ----------------------------------------------

CLUSTER = "cluster"
REPLICAS = ("decigraph-1", "decigraph-2", "decigraph-3")
CLUSTER_ENV = {"CSTP_AUTH_TOKENS": "ops:s3cret-0123456789", "PG_DECIGRAPH_PASSWORD": "0123abcd"}
HEALTHY = {"condition": "service_healthy"}


def cluster_services(compose: Mapping[str, Any]) -> dict[str, Any]:
    return {n: s for n, s in compose["services"].items() if CLUSTER in (s.get("profiles") or [])}


def bind_mounts(service: Mapping[str, Any]) -> dict[str, Path]:
    """A service's bind mounts of files from this checkout (``./path:/target[:ro]``): by target."""
    mounts = [str(v).split(":") for v in service.get("volumes") or []]
    return {m[1]: ROOT / m[0] for m in mounts if m[0].startswith("./")}


def postgres_settings(command: list[str]) -> dict[str, str]:
    """The ``-c name=value`` arguments of a ``postgres`` command."""
    assert command[0] == "postgres", command
    flags, values = command[1::2], command[2::2]
    assert set(flags) == {"-c"}, command
    assert len(flags) == len(values), command
    return dict(value.split("=", 1) for value in values)


def nginx_code(path: Path) -> str:
    """An nginx configuration without its comments."""
    return "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())


def test_cluster_profile_is_off_by_default() -> None:
    compose = load_compose()
    cluster, default = cluster_services(compose), default_services(compose)
    assert set(cluster) == {"pg-primary", "pg-standby", *REPLICAS, "lb"}
    assert set(compose["services"]) == set(default) | set(cluster)
    for name, service in cluster.items():
        assert service["profiles"] == [CLUSTER], name
        assert not set(service.get("depends_on") or {}) & set(default), name
    # Compose interpolates every service, in a profile or not: a variable the profile requires
    # (${X:?...}) would stop a plain `docker compose up`. Only what the default services
    # already require may be required.
    required = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?\?")
    required_by_default = set(required.findall(json.dumps(default)))
    for name, service in cluster.items():
        extra = set(required.findall(json.dumps(service))) - required_by_default
        assert not extra, f"{name} requires {extra}: `docker compose up` would refuse to start"
    # The profile's volumes are its own, declared at the top level.
    mine = {v for service in cluster.values() for v in named_volumes(service)}
    theirs = {v for service in default.values() for v in named_volumes(service)}
    assert mine
    assert not mine & theirs
    assert mine <= set(compose["volumes"])


def test_cluster_replicas_are_the_decigraph_service_on_the_shared_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compose = load_compose()
    services = compose["services"]
    decigraph = services["decigraph"]
    for key in list(os.environ):
        if key.startswith(("DECIGRAPH_", "CSTP_")):
            monkeypatch.delenv(key)
    data_volumes = set()
    for name in REPLICAS:
        replica = services[name]
        # The same image, built the same way.
        assert replica["build"] == decigraph["build"], name
        assert replica["image"] == decigraph["image"], name
        # The tokens as the single service takes them; each replica embeds its own ChromaDB.
        raw = replica["environment"]
        assert raw["CSTP_AUTH_TOKENS"] == decigraph["environment"]["CSTP_AUTH_TOKENS"], name
        assert "DECIGRAPH_CHROMA_URL" not in raw, name
        # The shared log: the decigraph role's database on pg-primary, reached directly; the
        # password is a substitution, never written in the file.
        assert "${PG_DECIGRAPH_PASSWORD" in raw["DECIGRAPH_EVENT_STORE"], name
        env = service_environment(replica, CLUSTER_ENV)
        url = urlsplit(env["DECIGRAPH_EVENT_STORE"])
        assert (url.scheme, url.hostname, url.port) == ("postgresql", "pg-primary", 5432), name
        assert (url.username, url.password) == ("decigraph", CLUSTER_ENV["PG_DECIGRAPH_PASSWORD"])
        assert url.path == "/decigraph", name
        # Its own data directory.
        [(volume, path)] = named_volumes(replica).items()
        assert path == env["DECIGRAPH_DATA_DIR"], name
        data_volumes.add(volume)
        # Ready, not merely alive: the single service's check, asked of /ready.
        single = [part.replace("/health", "/ready") for part in healthcheck_command(decigraph)]
        assert healthcheck_command(replica) == single, name
        assert {"interval", "timeout", "retries", "start_period"} <= set(replica["healthcheck"])
        # Started once PostgreSQL can commit (a synchronous standby streams); reached through
        # the balancer only.
        assert replica["depends_on"] == {"pg-primary": HEALTHY, "pg-standby": HEALTHY}, name
        assert "ports" not in replica, name
        # Settings takes the environment as given.
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings = Settings()
        assert settings.event_store == env["DECIGRAPH_EVENT_STORE"]
        assert (settings.data_dir, settings.port) == (Path("/data"), 8100)
        assert load_tokens(settings).agent_for("Bearer s3cret-0123456789") == "ops"
    assert len(data_volumes) == len(REPLICAS)
    assert "decigraph-data" not in data_volumes


def test_cluster_postgres_has_a_synchronous_standby() -> None:
    services = load_compose()["services"]
    primary, standby = services["pg-primary"], services["pg-standby"]
    for service in (primary, standby):
        assert service["image"] == "postgres:15"
        assert "ports" not in service  # only the compose network reaches it
        assert set(named_volumes(service).values()) == {"/var/lib/postgresql/data"}
        assert healthcheck_command(service)
        for path in bind_mounts(service).values():
            assert path.is_file(), path
            assert os.access(path, os.X_OK), path
        # Every password is a substitution.
        for key, value in service["environment"].items():
            assert "PASSWORD" not in key or str(value).startswith("${"), key
        # Entrypoints are scripts mounted from deploy/compose, ending in the image's own.
        [shell, script] = service["entrypoint"]
        assert shell == "bash"
        assert "exec docker-entrypoint.sh" in bind_mounts(service)[script].read_text()

    # The primary: every commit waits for a standby named in synchronous_standby_names.
    settings = postgres_settings(primary["command"])
    assert settings["wal_level"] in ("replica", "logical")
    assert settings.get("synchronous_commit", "on") in ("on", "remote_write", "remote_apply")
    names = re.fullmatch(r"(?:FIRST|ANY) (\d+) \((.+)\)", settings["synchronous_standby_names"])
    assert names is not None
    assert int(names[1]) >= 1
    standby_names = {name.strip().strip('"') for name in names[2].split(",")}
    [init] = [p for t, p in bind_mounts(primary).items() if t.startswith("/docker-entrypoint-init")]
    init_sql = init.read_text()
    assert "CREATE DATABASE decigraph OWNER decigraph" in init_sql
    assert "WITH REPLICATION LOGIN" in init_sql
    assert re.search(r"^host\s+replication\s+replicator\s", init_sql, re.MULTILINE)

    # The standby: cloned with pg_basebackup -R under a name the primary waits for, through a
    # slot the primary created.
    text = bind_mounts(standby)[standby["entrypoint"][1]].read_text()
    assert "pg_basebackup" in text
    assert "--write-recovery-conf" in text
    default = re.search(r'STANDBY_NAME="\$\{STANDBY_NAME:-(\w+)\}"', text)
    assert default is not None
    assert "application_name=$STANDBY_NAME" in text
    assert '--slot="$STANDBY_NAME"' in text
    assert default[1] in standby_names
    assert f"pg_create_physical_replication_slot('{default[1]}')" in init_sql
    assert postgres_settings(standby["command"])["cluster_name"] == default[1]
    assert standby["depends_on"] == {"pg-primary": HEALTHY}


def test_cluster_load_balancer() -> None:
    services = load_compose()["services"]
    lb = services["lb"]
    image = re.fullmatch(r"nginx:(\d+)\.(\d+)[\w.-]*", lb["image"])
    assert image is not None
    assert (int(image[1]), int(image[2])) >= (1, 28)  # `resolve` in upstreams: 1.27.3+
    code = nginx_code(bind_mounts(lb)["/etc/nginx/nginx.conf"])
    # All three replicas, on the port they listen on.
    port = service_environment(services["decigraph-1"], CLUSTER_ENV)["DECIGRAPH_PORT"]
    servers = re.findall(r"^\s*server\s+([\w.-]+:\d+)", code, re.MULTILINE)
    assert servers == [f"{name}:{port}" for name in REPLICAS]
    for path in ("/cstp", "/mcp", "/health", "/ready", "/ui", "/events"):
        location = rf"^\s*location\s+(=\s+)?{re.escape(path)}\s*\{{\s*proxy_pass http://"
        assert re.search(location, code, re.MULTILINE), path
    # A POST that reached a replica may have been committed: never replay it on another.
    retries = re.findall(r"proxy_next_upstream\s+([^;]*);", code)
    assert retries
    assert all("non_idempotent" not in retry for retry in retries)
    # Started once every replica is ready; published on loopback by default.
    assert lb["depends_on"] == dict.fromkeys(REPLICAS, HEALTHY)
    [published] = lb["ports"]
    host_ip, _, container_port = interpolate(published, {}).split(":")
    assert host_ip == "127.0.0.1"
    assert re.search(rf"^\s*listen\s+{container_port};", code, re.MULTILINE)


# -- static checks: the Kubernetes example -----------------------------------------------------


def kubernetes_documents() -> dict[str, list[dict[str, Any]]]:
    """Every YAML document under deploy/kubernetes, by kind."""
    files = sorted([*KUBERNETES.glob("*.yaml"), *KUBERNETES.glob("*.yml")])
    assert files
    kinds: dict[str, list[dict[str, Any]]] = {}
    for path in files:
        for document in yaml.safe_load_all(path.read_text()):
            if document is None:
                continue
            assert isinstance(document, dict), path
            assert {"apiVersion", "kind", "metadata"} <= set(document), path
            kinds.setdefault(document["kind"], []).append(document)
    return kinds


def test_kubernetes_example() -> None:
    kinds = kubernetes_documents()
    assert {"Cluster", "Deployment", "Service", "Secret", "PodDisruptionBudget"} <= set(kinds)

    # CloudNativePG: three instances, at least one synchronous standby, never downgraded.
    [cluster] = kinds["Cluster"]
    assert cluster["apiVersion"] == "postgresql.cnpg.io/v1"
    assert cluster["spec"]["instances"] == 3
    synchronous = cluster["spec"]["postgresql"]["synchronous"]
    assert synchronous["method"] in ("any", "first")
    assert synchronous["number"] >= 1
    assert synchronous.get("dataDurability", "required") == "required"

    [deployment] = kinds["Deployment"]
    assert deployment["spec"]["replicas"] == 3
    pod = deployment["spec"]["template"]
    [container] = pod["spec"]["containers"]
    env = {variable["name"]: variable for variable in container["env"]}
    # The log: the app secret CNPG generates for that cluster (its `uri` goes to `-rw`).
    store = env["DECIGRAPH_EVENT_STORE"]["valueFrom"]["secretKeyRef"]
    assert store == {"name": f"{cluster['metadata']['name']}-app", "key": "uri"}
    # The tokens: a Secret of this directory.
    tokens = env["CSTP_AUTH_TOKENS"]["valueFrom"]["secretKeyRef"]
    secrets = {secret["metadata"]["name"]: secret for secret in kinds["Secret"]}
    assert tokens["key"] in secrets[tokens["name"]]["stringData"]

    # Probes on the port decigraph listens on: ready on /ready, alive on /health.
    port = int(env["DECIGRAPH_PORT"]["value"])
    ports = {p.get("name"): p["containerPort"] for p in container["ports"]}
    assert port in ports.values()

    def probe(kind: str) -> str:
        get = container[kind]["httpGet"]
        assert ports.get(get["port"], get["port"]) == port, kind
        return str(get["path"])

    assert probe("readinessProbe") == "/ready"
    assert probe("livenessProbe") == "/health"
    assert probe("startupProbe") == "/health"
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300  # catching up

    # The data directory is a cache: an ephemeral volume.
    data_dir = env["DECIGRAPH_DATA_DIR"]["value"]
    [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == data_dir]
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert {"emptyDir", "ephemeral"} & set(volumes[mount["name"]])
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])

    # The Service and the budget select these pods.
    labels = pod["metadata"]["labels"].items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels
    [service] = kinds["Service"]
    assert service["spec"]["selector"].items() <= labels
    [service_port] = service["spec"]["ports"]
    assert ports.get(service_port["targetPort"], service_port["targetPort"]) == port
    [budget] = kinds["PodDisruptionBudget"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels

    # Every decigraph variable the manifests name is one Settings reads.
    text = "".join(p.read_text() for p in sorted(KUBERNETES.glob("*.y*ml")))
    named = set(re.findall(r"\b(?:DECIGRAPH|CSTP)_[A-Z0-9_]+\b", text))
    assert not named - settings_variables(), named - settings_variables()


def test_deploy_readmes_name_every_file() -> None:
    readmes = (DEPLOY / "README.md").read_text() + (KUBERNETES / "README.md").read_text()
    for path in DEPLOY.rglob("*"):
        if path.is_file() and path.name != "README.md":
            assert path.name in readmes, path.relative_to(ROOT)
