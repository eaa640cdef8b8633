"""An embedded PostgreSQL server from the Debian packages, on 127.0.0.1, for the demo and the tests.

The server runs from `/usr/lib/postgresql/<version>/bin` (install the `postgresql` package if absent). Postgres
refuses to run as root, so when we are root `initdb` and `pg_ctl` run as an unprivileged system user (`postgres`
by default, created by the Debian package) through `runuser`, and the data directory is owned by that user.
Layout of `<data_dir>`: `pgdata/` (the cluster), `postgres.log`, the Unix socket, and `server.json` (port),
so `rekey postgres status/stop` work from another process and a stop + start keeps every row. It runs with
`wal_level=logical` and the superuser `rekey` may replicate, so Debezium can stream its changes.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import time
from pathlib import Path

from kafka_rekey_dev.embedded import defaults, processes
from kafka_rekey_dev.embedded.errors import EmbeddedInfraError, NotReady, PortInUse, ToolMissing

DEFAULT_DATA_DIR = defaults.POSTGRES_DATA_DIR
DEFAULT_PORT = defaults.POSTGRES_PORT
DEFAULT_OS_USER = defaults.POSTGRES_OS_USER
SUPERUSER = "rekey"
DATABASE = "rekey"
REPLICATION_SLOTS = 10
PACKAGE_HINT = "install the Debian package: apt-get install -y postgresql"


def find_bin_dir() -> Path:
    """The newest `/usr/lib/postgresql/<version>/bin` holding `pg_ctl`, else `pg_config --bindir`."""
    candidates = sorted(
        (p for p in Path("/usr/lib/postgresql").glob("*/bin") if (p / "pg_ctl").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if candidates:
        return candidates[-1]
    pg_config = shutil.which("pg_config")
    if pg_config:
        bindir = Path(subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
                      .stdout.strip())
        if (bindir / "pg_ctl").exists():
            return bindir
    raise ToolMissing(f"PostgreSQL server binaries (pg_ctl, initdb) not found in /usr/lib/postgresql/*/bin: "
                      f"{PACKAGE_HINT}")


def free_port(start: int = DEFAULT_PORT) -> int:
    for port in range(start, min(start + 2000, 65535)):
        if processes.port_free(port):
            return port
    raise PortInUse(f"no free port found on 127.0.0.1 in {start}..{start + 2000} for an embedded PostgreSQL")


class PostgresServer:
    """Initialise, start, stop and inspect one PostgreSQL cluster in `data_dir`."""

    def __init__(self, data_dir: Path = DEFAULT_DATA_DIR, port: int | None = None,
                 os_user: str = DEFAULT_OS_USER, bin_dir: Path | None = None):
        self.data_dir = Path(data_dir).resolve()
        saved = self._load_port()
        self.port = saved if saved is not None else (port or DEFAULT_PORT)
        self.os_user = os_user if os.geteuid() == 0 else None
        self._bin_dir = bin_dir

    # -- paths ---------------------------------------------------------------------------------------
    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "postgres.log"

    @property
    def dsn(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    def _state_file(self) -> Path:
        return self.data_dir / "server.json"

    def _load_port(self) -> int | None:
        path = self._state_file()
        if not path.exists():
            return None
        port: int = json.loads(path.read_text())["port"]
        return port

    # -- commands ------------------------------------------------------------------------------------
    def _tool(self, name: str) -> str:
        return str((self._bin_dir or find_bin_dir()) / name)

    def _as_server_user(self, *argv: str) -> list[str]:
        return ["runuser", "-u", self.os_user, "--", *argv] if self.os_user else list(argv)

    def _run(self, *argv: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self._as_server_user(*argv), capture_output=True, text=True, check=False,
                              timeout=timeout, cwd=self.data_dir)

    def _prepare_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.os_user is None:
            return
        try:
            user = pwd.getpwnam(self.os_user)
        except KeyError as error:
            raise ToolMissing(f"we run as root and PostgreSQL refuses root, but the system user "
                              f"{self.os_user!r} to run it as does not exist: {PACKAGE_HINT} "
                              f"(it creates the user), or pass another unprivileged user") from error
        for path in [self.data_dir, *self.data_dir.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
        self.data_dir.chmod(0o700)
        if self._run("test", "-w", str(self.data_dir), timeout=10).returncode != 0:
            raise EmbeddedInfraError(
                f"the {self.os_user!r} user cannot reach {self.data_dir}: a parent directory is not traversable "
                f"by it (e.g. a 0700 directory owned by root); use a --data-dir under a world-traversable path"
            )

    def _init(self) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        result = self._run(self._tool("initdb"), "-D", str(self.pgdata), "-U", SUPERUSER, "--auth=trust",
                           "--encoding=UTF8", "--no-locale", "--no-instructions")
        if result.returncode != 0:
            raise EmbeddedInfraError(f"initdb into {self.pgdata} failed:\n{result.stdout}{result.stderr}")

    # -- lifecycle -----------------------------------------------------------------------------------
    def running(self) -> bool:
        if not self.pgdata.exists():
            return False
        return self._run(self._tool("pg_ctl"), "status", "-D", str(self.pgdata), timeout=10).returncode == 0

    def pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int((self.pgdata / "postmaster.pid").read_text().splitlines()[0])
        return None

    def start(self, timeout: float = 60.0) -> None:
        """Initialise on first use, start the server and wait until it accepts connections on `dsn`."""
        if self.running():
            self.wait_ready(timeout)
            return
        if not processes.port_free(self.port):
            raise PortInUse(f"port {self.port} on 127.0.0.1 is in use: stop what holds it, or start with another "
                            f"--port / --data-dir (is another PostgreSQL running? `rekey postgres status`)")
        self._prepare_dir()
        self._init()
        self._state_file().write_text(json.dumps({"port": self.port}))
        # On the command line, so a data directory initialised before these settings gets them as well.
        # Logical decoding is for Debezium's pgoutput plugin (the Connect worker's PostgreSQL connector).
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 "
                   f"-c unix_socket_directories='{self.data_dir}' -c max_connections=200 "
                   f"-c wal_level=logical -c max_replication_slots={REPLICATION_SLOTS} "
                   f"-c max_wal_senders={REPLICATION_SLOTS}")
        result = self._run(self._tool("pg_ctl"), "start", "-W", "-D", str(self.pgdata), "-l", str(self.log_file),
                           "-o", options)
        if result.returncode != 0:
            raise NotReady(f"pg_ctl start failed:\n{result.stdout}{result.stderr}\n{self.log_tail()}")
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until the server accepts connections, then make sure the `rekey` database exists."""
        import psycopg

        started = time.monotonic()
        deadline = started + timeout
        last_error = "not tried"
        while time.monotonic() < deadline:
            try:
                with psycopg.connect(self._dsn("postgres"), connect_timeout=2, autocommit=True) as conn:
                    if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone() is None:
                        conn.execute(f'CREATE DATABASE "{DATABASE}"')
                    return
            except psycopg.OperationalError as error:
                last_error = str(error).strip()
            if time.monotonic() - started > 2 and not self.running():
                raise NotReady(f"PostgreSQL in {self.pgdata} exited during start-up:\n{self.log_tail()}")
            time.sleep(0.2)
        raise NotReady(f"PostgreSQL on port {self.port} not ready in {timeout:.0f}s ({last_error}):\n"
                       f"{self.log_tail()}")

    def _dsn(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (active sessions are rolled back); the data stays in `data_dir`."""
        if not self.running():
            return
        result = self._run(self._tool("pg_ctl"), "stop", "-D", str(self.pgdata), "-m", "fast", "-w",
                           "-t", str(int(timeout)), timeout=timeout + 10)
        if result.returncode != 0:
            raise EmbeddedInfraError(f"pg_ctl stop failed:\n{result.stdout}{result.stderr}\n{self.log_tail()}")

    def status(self) -> dict[str, object]:
        running = self.running()
        return {
            "data_dir": str(self.data_dir),
            "port": self.port,
            "pid": self.pid() if running else None,
            "running": running,
            "accepting": running and self._accepting(),
            "dsn": self.dsn,
        }

    def _accepting(self) -> bool:
        return self._run(self._tool("pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port),
                         timeout=10).returncode == 0

    def log_tail(self, lines: int = 25) -> str:
        text = ""
        if self.log_file.exists():
            text = "".join(self.log_file.read_text(errors="replace").splitlines(keepends=True)[-lines:])
        return f"--- {self.log_file} tail ---\n{text}"
