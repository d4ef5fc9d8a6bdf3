"""Real PostgreSQL servers for tests: a primary, or a primary with a synchronous standby.

Each :class:`PgServer` lives in a directory of its own (``/tmp/decigraph-pg-XXXX/``: ``data/``,
``run/`` for its unix socket, ``server.log``), listens on 127.0.0.1 on a free port with trust
authentication, and runs with the durability settings of production (``fsync``,
``synchronous_commit = on``, ``wal_level = replica``). The postmaster is a child of the test
process: :meth:`PgServer.kill` signals it, :meth:`PgServer.stop` shuts it down, and
:meth:`PgServer.destroy` (every fixture's and context manager's teardown) stops it immediately,
waits until none of its processes is left, and removes the directory.

PostgreSQL refuses to run as root, so when the tests run as root ``initdb``, ``pg_basebackup``,
``pg_ctl`` and the servers run as the ``postgres`` system user (``DECIGRAPH_PG_OS_USER`` names
another); otherwise as the current user. The database role is :data:`PG_USER`, the bootstrap
superuser, which owns the databases the fixtures create.

Fixtures (:mod:`tests.support.pgfixtures`, a plugin registered in tests/conftest.py):

``pg_server``
    a fresh empty database (:class:`PgDatabase`: ``.url``, ``.server``) on a primary shared by
    the test module; a test may kill or stop that server, the next test gets it restarted.
``pg_cluster``
    a fresh empty database (:class:`PgCluster`: ``.url``, ``.standby_url``, ``.primary``,
    ``.standby``) on a primary with a synchronous standby of its own, torn down after the test.

Without PostgreSQL binaries (see :func:`find_pg_bin`) both fixtures fail, naming how to install
them, unless ``DECIGRAPH_SKIP_PG=1``, when they skip. ``DECIGRAPH_PG_KEEP=1`` keeps the
directories (and logs) of stopped servers for debugging.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import psycopg
from psycopg.sql import SQL, Composed, Identifier
from psycopg.sql import Literal as SqlLiteral

from tests.support import pgprocs

PG_USER = "decigraph"
"""The database role of every server (bootstrap superuser, trust authentication)."""

PREFIX = "decigraph-pg-"
INSTALL_HINT = (
    "PostgreSQL server binaries (postgres, initdb, pg_ctl, pg_basebackup) were not found: "
    "install them (`apt-get install postgresql`), or set DECIGRAPH_PG_BIN to their directory; "
    "DECIGRAPH_SKIP_PG=1 skips the PostgreSQL tests instead."
)
_TOOLS = ("postgres", "initdb", "pg_ctl", "pg_basebackup")
_STOP_SIGNALS = {"smart": signal.SIGTERM, "fast": signal.SIGINT, "immediate": signal.SIGQUIT}
StopMode = Literal["smart", "fast", "immediate"]
Row = tuple[Any, ...]
Statement = str | bytes | SQL | Composed


class PgNotFoundError(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


class PgError(RuntimeError):
    """A server did not start, answer or change state in time (the message ends with its log)."""


def find_pg_bin() -> Path:
    """The directory holding postgres, initdb, pg_ctl and pg_basebackup.

    ``$DECIGRAPH_PG_BIN`` if set, else the newest ``/usr/lib/postgresql/<major>/bin`` (Debian's
    layout), else the directory of ``pg_ctl`` on ``PATH``; raises :class:`PgNotFoundError`.
    """

    def complete(directory: Path) -> bool:
        return all((directory / tool).is_file() for tool in _TOOLS)

    if configured := os.environ.get("DECIGRAPH_PG_BIN"):
        if complete(Path(configured)):
            return Path(configured)
        raise PgNotFoundError(f"DECIGRAPH_PG_BIN={configured}: {INSTALL_HINT}")
    debian = [d for d in Path("/usr/lib/postgresql").glob("*/bin") if complete(d)]
    numeric = [d for d in debian if d.parent.name.replace(".", "").isdigit()]
    if numeric:
        return max(numeric, key=lambda d: tuple(int(p) for p in d.parent.name.split(".")))
    if (pg_ctl := shutil.which("pg_ctl")) and complete(Path(pg_ctl).resolve().parent):
        return Path(pg_ctl).resolve().parent
    raise PgNotFoundError(INSTALL_HINT)


@dataclass(frozen=True)
class _OsUser:
    uid: int
    gid: int


def _os_user() -> _OsUser | None:
    """The system user the servers run as when we are root (None: as ourselves)."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("DECIGRAPH_PG_OS_USER", "postgres")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise PgNotFoundError(
            f"running as root, but there is no system user {name!r} to run PostgreSQL as "
            "(`apt-get install postgresql` creates `postgres`)"
        ) from None
    return _OsUser(entry.pw_uid, entry.pw_gid)


# --- servers ----------------------------------------------------------------------------------

_LIVE: dict[int, PgServer] = {}  # id -> server not yet destroyed (stopped at exit, if any left)


class PgServer:
    """One PostgreSQL server in a directory of its own; see the module's docstring.

    ``PgServer()`` only makes the directory; :meth:`create` (initdb + :meth:`start`) and
    :meth:`standby_of` (pg_basebackup + start + synchronous replication) make usable servers.
    """

    def __init__(self, name: str = "primary", *, bin_dir: Path | None = None) -> None:
        self.name = name
        self.bin_dir = bin_dir or find_pg_bin()
        self.os_user = _os_user()
        _sweep_stale()
        self.base = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/tmp" if self.os_user else None))
        self.data_dir = self.base / "data"
        self.socket_dir = self.base / "run"
        self.log_path = self.base / "server.log"
        self.port = pgprocs.free_port()
        self.settings: dict[str, str] = {}
        self.process: subprocess.Popen[bytes] | None = None
        self._orphans: list[
            pgprocs.Proc
        ] = []  # processes of a killed postmaster, until they are gone
        self._shm: tuple[int, int] | None = None  # (key, id) of its SysV segment, once started
        (self.base / "owner").write_text(
            f"{os.getpid()} {(pgprocs.of_pid(os.getpid()) or (0, 0))[1]}\n"
        )
        self.socket_dir.mkdir()
        self._own(self.base, self.socket_dir)
        _LIVE[id(self)] = self

    # -- making one

    @classmethod
    def create(
        cls,
        name: str = "primary",
        *,
        settings: Mapping[str, object] | None = None,
        start: bool = True,
    ) -> PgServer:
        """A new primary: initdb, the test configuration (plus ``settings``), started."""
        server = cls(name)
        try:
            server.initdb(settings)
            if start:
                server.start()
        except BaseException:
            server.destroy()
            raise
        return server

    def initdb(self, settings: Mapping[str, object] | None = None) -> None:
        """Initialise ``data_dir`` (role :data:`PG_USER`, trust for local, 127.0.0.1 and
        replication connections) and write the configuration."""
        self._run(
            "initdb", "-D", str(self.data_dir), "-U", PG_USER, "--auth=trust", "--encoding=UTF8",
            "--locale=C", "--no-sync", "--no-instructions",
        )  # fmt: skip
        self._write(
            self.data_dir / "pg_hba.conf",
            "local all all trust\nhost all all 127.0.0.1/32 trust\n"
            "local replication all trust\nhost replication all 127.0.0.1/32 trust\n",
        )
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            conf.write("\ninclude 'decigraph-test.conf'\n")
        self.configure(**(settings or {}))

    def configure(self, **settings: object) -> None:
        """(Re)write ``decigraph-test.conf``: the test configuration, then ``settings`` and any
        given before; takes effect at the next start (or ``SELECT pg_reload_conf()``)."""
        self.settings.update({key: str(value) for key, value in settings.items()})
        base = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.socket_dir),
            "fsync": "on",
            "synchronous_commit": "on",
            "full_page_writes": "on",
            "wal_level": "replica",
            "max_wal_senders": "10",
            "max_replication_slots": "10",
            "wal_keep_size": "256MB",
            "max_wal_size": "256MB",
            "min_wal_size": "32MB",
            "hot_standby": "on",
            "wal_retrieve_retry_interval": "200ms",
            "shared_buffers": "16MB",
            "max_connections": "50",
            "timezone": "UTC",
            "log_line_prefix": "%m [%p] %q%a ",
        }
        lines = [
            f"{key} = {_conf_value(value)}" for key, value in {**base, **self.settings}.items()
        ]
        self._write(self.data_dir / "decigraph-test.conf", "\n".join(lines) + "\n")

    @classmethod
    def standby_of(
        cls, primary: PgServer, name: str = "standby1", *, sync: bool = True, timeout: float = 60
    ) -> PgServer:
        """A hot standby of ``primary`` (``pg_basebackup -R -X stream``, ``application_name =
        name``), started; with ``sync``, the primary's ``synchronous_standby_names`` becomes
        ``name`` and this returns once ``pg_stat_replication`` shows it as ``sync``."""
        standby = cls(name, bin_dir=primary.bin_dir)
        try:
            conninfo = f"host=127.0.0.1 port={primary.port} user={PG_USER} application_name={name}"
            standby._run(
                "pg_basebackup", "-D", str(standby.data_dir), "-d", conninfo, "-R",
                "-X", "stream", "--checkpoint=fast", "--no-sync", "-w",
            )  # fmt: skip
            auto = standby.data_dir / "postgresql.auto.conf"
            # A standby is never itself waiting for standbys (matters once it is promoted).
            kept = [
                line for line in auto.read_text().splitlines() if "synchronous_standby" not in line
            ]
            standby._write(auto, "\n".join(kept) + "\n")
            if f"application_name={name}" not in auto.read_text():
                raise PgError(f"pg_basebackup -R wrote no application_name:\n{auto.read_text()}")
            standby.settings = dict(primary.settings)
            standby.configure()
            standby.start(timeout)
            if sync:
                primary.query(
                    SQL("ALTER SYSTEM SET synchronous_standby_names = {}").format(SqlLiteral(name))
                )
                primary.query("SELECT pg_reload_conf()")
                primary.wait_for(
                    lambda: (
                        primary.query(
                            "SELECT 1 FROM pg_stat_replication WHERE application_name = %s"
                            " AND state = 'streaming' AND sync_state = 'sync'",
                            (name,),
                        )
                        != []
                    ),
                    timeout,
                    f"{name} streaming as the synchronous standby",
                )
        except BaseException:
            standby.destroy()
            raise
        return standby

    # -- running it

    @property
    def running(self) -> bool:
        """Whether the postmaster is alive (it may be SIGSTOPped)."""
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        """The postmaster's pid while it runs."""
        return self.process.pid if self.running and self.process else None

    def start(self, timeout: float = 60) -> None:
        """Start the postmaster and :meth:`wait_ready`. After a :meth:`kill` the start is a crash
        recovery; if the port was taken meanwhile, a new free one is picked."""
        if self.running:
            return
        pgprocs.reap(
            self._orphans, grace=10
        )  # a new postmaster refuses while old backends are attached
        self._orphans = []
        for _attempt in range(3):
            with self.log_path.open("ab") as log:
                self.process = self._popen(["postgres", "-D", str(self.data_dir)], log)
            try:
                self.wait_ready(timeout)
                self._shm = pgprocs.shm_of(self.data_dir)
                return
            except PgError:
                if self.running or not re.search(r"could not bind|in use", self.log_tail(20)):
                    raise
            self.port = pgprocs.free_port()
            self.configure()
        raise PgError(f"{self.name}: no free port in three attempts\n{self.log_tail()}")

    def wait_ready(self, timeout: float = 60) -> None:
        """Until the server accepts connections (a standby: read-only ones)."""

        def ready() -> bool:
            if not self.running:
                raise PgError(f"{self.name} exited while starting\n{self.log_tail()}")
            status = pgprocs.read_text(self.data_dir / "postmaster.pid").splitlines()[7:8]
            if status and status[0].strip() in ("ready", "standby"):
                with contextlib.suppress(psycopg.OperationalError):
                    psycopg.connect(self.url(), connect_timeout=2).close()
                    return True
            return False

        self.wait_for(ready, timeout, "accepting connections", interval=0.02)

    def stop(self, mode: StopMode = "fast", timeout: float = 60) -> None:
        """Shut down (smart/fast/immediate, as ``pg_ctl stop -m``) and wait for every process."""
        if self.process is None:
            return
        procs = self.processes()
        pgprocs.send(procs, signal.SIGCONT)  # a stopped child would hold up the shutdown
        if self.running:
            self.process.send_signal(_STOP_SIGNALS[mode])
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        pgprocs.reap(procs + self._orphans, grace=10)
        self._orphans = []
        self.process = None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the postmaster only (a crash: its backends notice and exit by
        themselves; :meth:`start` or :meth:`destroy` later wait for them). SIGKILL returns once
        the postmaster is dead."""
        if not self.running or self.process is None:
            raise PgError(f"{self.name} is not running")
        if sig == signal.SIGKILL:
            self._orphans += [p for p in self.processes() if p[0] != self.process.pid]
        self.process.send_signal(sig)
        if sig == signal.SIGKILL:
            self.process.wait()

    def destroy(self) -> None:
        """Stop immediately, wait until no process is left, remove the directory (unless
        ``DECIGRAPH_PG_KEEP=1``). Safe to call twice, in any state."""
        try:
            self.stop("immediate", timeout=20)
            pgprocs.remove_shm(self._shm)
        finally:
            _LIVE.pop(id(self), None)
            if os.environ.get("DECIGRAPH_PG_KEEP") != "1":
                shutil.rmtree(self.base, ignore_errors=True)

    def processes(self) -> list[tuple[int, int]]:
        """(pid, start time) of the postmaster and its children (empty when not running)."""
        if not self.running or self.process is None:
            return []
        postmaster = pgprocs.of_pid(self.process.pid)
        return [postmaster, *pgprocs.children(self.process.pid)] if postmaster else []

    def promote(self, timeout: float = 60) -> None:
        """``pg_ctl promote``, then wait until ``pg_is_in_recovery()`` is false."""
        self._run("pg_ctl", "promote", "-D", str(self.data_dir), "-w", "-t", str(int(timeout)))
        self.wait_for(lambda: not self.is_in_recovery(), timeout, "out of recovery")

    # -- talking to it

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{dbname}"

    def connect(self, dbname: str = "postgres", **kwargs: Any) -> psycopg.Connection[Row]:
        """A psycopg connection as :data:`PG_USER` (``connect_timeout`` 10 s unless given)."""
        return psycopg.connect(self.url(dbname), **{"connect_timeout": 10, **kwargs})

    def query(self, sql: Statement, params: Any = None, *, dbname: str = "postgres") -> list[Row]:
        """Run one statement in autocommit on a new connection; its rows (``[]`` if none)."""
        with self.connect(dbname, autocommit=True) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database owned by :data:`PG_USER` (named ``test_<hex>`` unless
        given); returns its name."""
        name = name or f"test_{uuid.uuid4().hex[:12]}"
        self.query(SQL("CREATE DATABASE {} OWNER {}").format(Identifier(name), Identifier(PG_USER)))
        return name

    def is_in_recovery(self) -> bool:
        return bool(self.query("SELECT pg_is_in_recovery()")[0][0])

    def current_lsn(self) -> str:
        """The primary's current WAL write position."""
        return str(self.query("SELECT pg_current_wal_lsn()")[0][0])

    def wait_replayed(self, lsn: str, timeout: float = 30) -> None:
        """Until this standby has replayed the WAL up to ``lsn`` (its reads then see it)."""
        self.wait_for(
            lambda: bool(self.query("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,))[0][0]),
            timeout,
            f"WAL replayed up to {lsn}",
        )

    def walsender_pids(self, application_name: str | None = None) -> list[int]:
        """Pids of this server's walsenders (of ``application_name`` only, if given), from
        ``pg_stat_replication``. When the server does not answer, all of them, from the process
        titles (``postgres: walsender <user> <client address> ...``: no application name)."""
        try:
            rows = self.query(
                "SELECT pid FROM pg_stat_replication"
                " WHERE %(name)s::text IS NULL OR application_name = %(name)s",
                {"name": application_name},
            )
        except psycopg.Error:
            if application_name is not None:
                raise
            titled = [pid for pid, _start in self.processes()]
            return [pid for pid in titled if pgprocs.cmdline(pid).startswith("postgres: walsender")]
        return [int(row[0]) for row in rows]

    def log_tail(self, lines: int = 40) -> str:
        text = pgprocs.read_text(self.log_path, errors="replace").splitlines()[-lines:]
        return f"--- {self.log_path} ({self.name}), last {len(text)} lines ---\n" + "\n".join(text)

    def wait_for(
        self, condition: Callable[[], bool], timeout: float, what: str, *, interval: float = 0.05
    ) -> None:
        """Poll ``condition()`` until true; :class:`PgError` with the log tail after
        ``timeout`` seconds (errors of the condition other than psycopg's propagate)."""
        deadline = time.monotonic() + timeout
        error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except psycopg.Error as exc:
                error = exc
            time.sleep(interval)
        raise PgError(f"{self.name}: not {what} after {timeout} s ({error})\n{self.log_tail()}")

    def __repr__(self) -> str:
        return f"<PgServer {self.name} port={self.port} pid={self.pid} dir={self.base}>"

    # -- as the right system user

    def _popen(self, args: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
        user = self.os_user
        return subprocess.Popen(
            [str(self.bin_dir / args[0]), *args[1:]],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.base,
            env=self._env(),
            start_new_session=True,  # a ^C at the terminal reaches pytest, which stops it
            user=user.uid if user else None,
            group=user.gid if user else None,
            extra_groups=[] if user else None,
        )

    def _run(self, *args: str, timeout: float = 120) -> None:
        """Run a PostgreSQL tool to completion (its output goes to the log)."""
        with self.log_path.open("ab") as log:
            log.write(f"$ {' '.join(args)}\n".encode())
            log.flush()
            process = self._popen(list(args), log)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.returncode != 0:
            failure = f"exited with {process.returncode}" if process.returncode > 0 else "timed out"
            raise PgError(f"{self.name}: {args[0]} {failure}\n{self.log_tail()}")

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", TZ="UTC")
        if self.os_user:
            env["HOME"] = str(self.base)  # not root's home, which it cannot read
        return env

    def _own(self, *paths: Path) -> None:
        if self.os_user:
            for path in paths:
                os.chown(path, self.os_user.uid, self.os_user.gid)

    def _write(self, path: Path, text: str) -> None:
        path.write_text(text)
        self._own(path)


def _conf_value(value: str) -> str:
    """Quoted: PostgreSQL accepts a quoted string for a setting of any type."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _sweep_stale() -> None:
    """Once per process: remove the servers of earlier test runs that died without their
    teardown (SIGKILLed pytest): kill their processes, remove their directories."""
    global _swept
    if _swept:
        return
    _swept = True
    for owner in Path("/tmp").glob(f"{PREFIX}*/owner"):
        pid, _, start = pgprocs.read_text(owner).partition(" ")
        if not pid.isdigit() or pgprocs.alive((int(pid), int(start or 0))):
            continue
        data_dir = owner.parent / "data"
        postmaster = pgprocs.read_text(data_dir / "postmaster.pid").split("\n", 1)[0]
        if postmaster.isdigit() and str(data_dir) in pgprocs.cmdline(int(postmaster)):
            procs = [p for p in [pgprocs.of_pid(int(postmaster))] if p] + pgprocs.children(
                int(postmaster)
            )
            pgprocs.reap(procs, grace=0)
        pgprocs.remove_shm(pgprocs.shm_of(data_dir))
        shutil.rmtree(owner.parent, ignore_errors=True)


_swept = False


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_LIVE.values()):
        server.destroy()


@dataclass
class PgDatabase:
    """A database created for one test on ``server``."""

    server: PgServer
    dbname: str

    @property
    def url(self) -> str:
        return self.server.url(self.dbname)

    def connect(self, **kwargs: Any) -> psycopg.Connection[Row]:
        return self.server.connect(self.dbname, **kwargs)


@dataclass
class PgCluster:
    """A primary, its synchronous standby and a database created on them for one test."""

    primary: PgServer
    standby: PgServer
    dbname: str

    @property
    def url(self) -> str:
        """The database on the primary."""
        return self.primary.url(self.dbname)

    @property
    def standby_url(self) -> str:
        return self.standby.url(self.dbname)

    def wait_replayed(self, timeout: float = 30) -> None:
        """Until the standby's reads see everything the primary has written so far (a
        synchronous commit only waits for the standby's flush, not its replay)."""
        self.standby.wait_replayed(self.primary.current_lsn(), timeout)

    def destroy(self) -> None:
        try:
            self.standby.destroy()
        finally:
            self.primary.destroy()


@contextlib.contextmanager
def start_server(name: str = "primary", **settings: object) -> Iterator[PgServer]:
    """A started primary, destroyed on exit (however the block ends)."""
    server = PgServer.create(name, settings=settings)
    try:
        yield server
    finally:
        server.destroy()


@contextlib.contextmanager
def start_cluster(standby_name: str = "standby1", **settings: object) -> Iterator[PgCluster]:
    """A primary with a synchronous standby and an empty database on both, destroyed on exit."""
    with start_server("primary", **settings) as primary:
        standby = PgServer.standby_of(primary, standby_name)
        try:
            cluster = PgCluster(primary, standby, primary.create_database())
            cluster.wait_replayed()
            yield cluster
        finally:
            standby.destroy()
