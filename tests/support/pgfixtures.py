"""The pytest side of the PostgreSQL harness (:mod:`tests.support.pgcluster`): the
``pg_server`` and ``pg_cluster`` fixtures, and the servers' log tails in a failing test's
report. Registered as a plugin in tests/conftest.py."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.support.pgcluster import (
    PgCluster,
    PgDatabase,
    PgNotFoundError,
    PgServer,
    _os_user,
    find_pg_bin,
    start_cluster,
    start_server,
)


def require_pg() -> Path:
    """The binaries' directory, or fail the test (skip it with ``DECIGRAPH_SKIP_PG=1``)."""
    try:
        bin_dir = find_pg_bin()
        _os_user()
    except PgNotFoundError as exc:
        missing = str(exc)
    else:
        return bin_dir
    if os.environ.get("DECIGRAPH_SKIP_PG") == "1":
        pytest.skip(f"DECIGRAPH_SKIP_PG=1: {missing}")
    pytest.fail(missing, pytrace=False)


_SERVERS = pytest.StashKey[list[PgServer]]()


def _used_by(request: pytest.FixtureRequest, *servers: PgServer) -> None:
    request.node.stash.setdefault(_SERVERS, []).extend(servers)


@pytest.fixture(scope="module")
def pg_shared_server() -> Iterator[PgServer]:
    """The primary behind ``pg_server``, shared by one test module."""
    require_pg()
    with start_server("primary") as server:
        yield server


@pytest.fixture
def pg_server(pg_shared_server: PgServer, request: pytest.FixtureRequest) -> PgDatabase:
    """A fresh empty database on the module's primary (restarted if a test left it down)."""
    if not pg_shared_server.running:
        pg_shared_server.start()
    _used_by(request, pg_shared_server)
    return PgDatabase(pg_shared_server, pg_shared_server.create_database())


@pytest.fixture
def pg_cluster(request: pytest.FixtureRequest) -> Iterator[PgCluster]:
    """A fresh empty database on a primary with a synchronous standby, both the test's own."""
    require_pg()
    with start_cluster() as cluster:
        _used_by(request, cluster.primary, cluster.standby)
        yield cluster


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """On a failing test, the log tails of the servers its fixtures gave it (when this module is
    registered as a plugin)."""
    report = yield
    if report.failed:
        for server in item.stash.get(_SERVERS, []):
            report.sections.append((f"postgres {server.name}", server.log_tail(60)))
    return report
