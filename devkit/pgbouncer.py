"""A private PgBouncer (Debian's /usr/sbin/pgbouncer, or $PGBOUNCER) in front of
a test PostgreSQL: a free loopback port, SCRAM authentication from a generated
auth file, session or transaction pooling, and an admin console for PAUSE,
RESUME and the like. Stopped and started again on the same port, it is a
pooler restart.

    with pgbouncer_server(pg, "transaction", {"orpycamcp_exporter": password}) as bouncer:
        url = bouncer.url("orpycamcp_exporter", password, "platform_1")
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import pytest

from exporter.tools.throwaway import ServerUnavailable, end_process, free_port, wait_for_port, wait_port_free

ADMIN_USER = "bouncer_admin"
POOL_MODES = ("session", "transaction", "statement")


def pgbouncer_binary() -> str:
    binary = os.environ.get("PGBOUNCER") or shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not Path(binary).exists():
        raise ServerUnavailable("PgBouncer", "pgbouncer not found (apt-get install pgbouncer, or set PGBOUNCER)")
    return binary


def _quote(value: str) -> str:
    """A name or password as the auth file wants it: in double quotes, embedded ones doubled."""
    return '"' + value.replace('"', '""') + '"'


@dataclass
class LocalPgBouncer:
    """One PgBouncer process and its files; `settings` override the [pgbouncer] section."""

    base: Path
    port: int
    server_port: int
    pool_mode: str
    users: dict[str, str]
    binary: str
    admin_password: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    settings: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    def url(self, user: str, password: str, database: str) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{database}"

    @property
    def admin_url(self) -> str:
        return self.url(ADMIN_USER, self.admin_password, "pgbouncer")

    @property
    def log_path(self) -> Path:
        return self.base / "pgbouncer.log"

    def write_config(self) -> Path:
        users = {**self.users, ADMIN_USER: self.admin_password}
        (self.base / "userlist.txt").write_text(
            "".join(f"{_quote(user)} {_quote(password)}\n" for user, password in users.items())
        )
        options = {
            "listen_addr": "127.0.0.1",
            "listen_port": str(self.port),
            "unix_socket_dir": "",
            "auth_type": "scram-sha-256",
            "auth_file": str(self.base / "userlist.txt"),
            "admin_users": ADMIN_USER,
            "pool_mode": self.pool_mode,
            "default_pool_size": "4",
            "max_client_conn": "100",
            # Idle server connections go quickly, so a test can see that nothing is left.
            "server_idle_timeout": "1",
            "logfile": str(self.log_path),
            "pidfile": str(self.base / "pgbouncer.pid"),
        } | self.settings
        config = self.base / "pgbouncer.ini"
        config.write_text(
            f"[databases]\n* = host=127.0.0.1 port={self.server_port}\n\n[pgbouncer]\n"
            + "".join(f"{key} = {value}\n" for key, value in options.items())
        )
        return config

    def start(self, timeout: float = 15.0) -> None:
        config = self.write_config()
        command = [self.binary, str(config)]
        if os.geteuid() == 0:
            # PgBouncer refuses to run as root; its files must then be the other user's.
            user = "postgres" if _user_exists("postgres") else "nobody"
            shutil.chown(self.base, user)
            for path in self.base.iterdir():
                shutil.chown(path, user)
            command += ["-u", user]
        with open(self.base / "stdout.log", "ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=out)
        if not wait_for_port(self.port, timeout, self.process):
            tail = self.log_tail()
            self.stop()
            raise ServerUnavailable("PgBouncer", f"pgbouncer did not start: {tail}")

    def log_tail(self) -> str:
        text = ""
        for name in ("stdout.log", "pgbouncer.log"):
            path = self.base / name
            if path.exists():
                text += path.read_text(errors="replace")[-800:]
        return text

    def stop(self, mode: signal.Signals = signal.SIGTERM) -> None:
        """SIGTERM: immediate shutdown, every client connection dropped; SIGKILL: a crash."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        end_process(process, mode, timeout=15)
        wait_port_free(self.port)

    def restart(self) -> None:
        self.stop()
        self.start()

    async def admin(self, command: str) -> None:
        """A command on the admin console (PAUSE, RESUME, RECONNECT ...): simple-query only."""
        connection = await asyncpg.connect(self.admin_url, statement_cache_size=0)
        try:
            await connection.execute(command)
        finally:
            await connection.close()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def start_pgbouncer(
    server_port: int,
    pool_mode: str,
    users: Mapping[str, str],
    settings: Mapping[str, str] | None = None,
) -> LocalPgBouncer:
    """A PgBouncer on a free port in front of the PostgreSQL on `server_port`; `users`
    (name: password) may log in, and PgBouncer logs into the server with the same."""
    if pool_mode not in POOL_MODES:
        raise ValueError(f"pool_mode must be one of {POOL_MODES}, got {pool_mode!r}")
    base = Path(tempfile.mkdtemp(prefix="orpycamcp-pgbouncer-"))
    bouncer = LocalPgBouncer(
        base=base,
        port=free_port(),
        server_port=server_port,
        pool_mode=pool_mode,
        users=dict(users),
        binary=pgbouncer_binary(),
        settings=dict(settings or {}),
    )
    try:
        bouncer.start()
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    return bouncer


@contextmanager
def pgbouncer_server(
    server_port: int,
    pool_mode: str,
    users: Mapping[str, str],
    settings: Mapping[str, str] | None = None,
) -> Iterator[LocalPgBouncer]:
    """A private PgBouncer for a test; the test fails (never skips) when it cannot start."""
    try:
        bouncer = start_pgbouncer(server_port, pool_mode, users, settings)
    except ServerUnavailable as exc:
        pytest.fail(f"{exc}. Install PgBouncer (apt-get install pgbouncer) or set PGBOUNCER.", pytrace=False)
    try:
        yield bouncer
    finally:
        bouncer.remove()
