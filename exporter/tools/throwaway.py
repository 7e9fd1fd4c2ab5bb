"""Throwaway PostgreSQL and Redis servers from the local binaries, for the demo:
a private directory, a free loopback port, gone when removed. The tests build
on these (devkit/servers.py) to pause, kill and restart them."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar


class ServerUnavailable(RuntimeError):
    """A server binary is missing or the server would not start."""

    def __init__(self, server: str, problem: str) -> None:
        self.server = server
        self.problem = problem
        super().__init__(f"cannot start a local {server}: {problem}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if process is not None and process.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
        time.sleep(0.05)
    return False


def end_process(process: subprocess.Popen[bytes] | None, mode: signal.Signals, timeout: float) -> None:
    """Send `mode` to a server process and wait `timeout` s for it to exit, then kill it."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(mode)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_port_free(port: int, timeout: float = 10.0) -> None:
    """Wait (at most `timeout` s) until nothing accepts on `port` any more."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and wait_for_port(port, 0.05):
        time.sleep(0.1)


def postgres_bindir() -> Path:
    """Where initdb and postgres live: $PG_BINDIR, else the newest Debian install, else PATH."""
    candidates = [os.environ.get("PG_BINDIR", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(initdb).resolve().parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists() and (Path(candidate) / "postgres").exists():
            return Path(candidate)
    raise ServerUnavailable("PostgreSQL", "initdb/postgres not found (apt-get install postgresql, or set PG_BINDIR)")


def unprivileged_user() -> pwd.struct_passwd | None:
    """PostgreSQL refuses to run as root: run it as the postgres (or nobody) user then."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise ServerUnavailable("PostgreSQL", "running as root and neither a postgres nor a nobody user exists")


@dataclass
class LocalPostgres:
    """A private PostgreSQL cluster: superuser `postgres` with a random password, TCP on 127.0.0.1."""

    base: Path
    port: int
    password: str
    bindir: Path
    settings: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def datadir(self) -> Path:
        return self.base / "data"

    def url(self, user: str = "postgres", password: str | None = None, database: str = "postgres") -> str:
        secret = self.password if password is None else password
        return f"postgresql://{user}:{secret}@127.0.0.1:{self.port}/{database}"

    def _run_as(self) -> dict[str, int]:
        user = unprivileged_user()
        return {} if user is None else {"user": user.pw_uid, "group": user.pw_gid}

    def init(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        pwfile = self.base / "pwfile"
        pwfile.write_text(self.password + "\n")
        user = unprivileged_user()
        if user is not None:
            for path in (self.base, pwfile):
                os.chown(path, user.pw_uid, user.pw_gid)
        result = subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.datadir),
                "-U",
                "postgres",
                "--pwfile",
                str(pwfile),
                "--auth",
                "scram-sha-256",
                "--encoding",
                "UTF8",
                "--locale",
                "C",
                "--no-sync",
            ],
            capture_output=True,
            check=False,
            **self._run_as(),  # type: ignore[call-overload]
        )
        pwfile.unlink()
        if result.returncode != 0:
            raise ServerUnavailable("PostgreSQL", f"initdb failed: {result.stderr.decode(errors='replace')[-500:]}")

    def start(self, timeout: float = 30.0) -> None:
        options = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.base),
            # Throwaway data: no need to survive an OS crash. A killed server
            # (the fault tests do that) still recovers every committed row.
            "fsync": "off",
            "full_page_writes": "off",
            "max_connections": "100",
        } | self.settings
        command = [str(self.bindir / "postgres"), "-D", str(self.datadir)]
        for key, value in options.items():
            command += ["-c", f"{key}={value}"]
        log = open(self.base / "postgres.log", "ab")  # noqa: SIM115 -- kept open by the server process
        self.process = subprocess.Popen(command, stdout=log, stderr=log, **self._run_as())  # type: ignore[call-overload]
        log.close()
        if not wait_for_port(self.port, timeout, self.process) or not self._accepting(timeout):
            tail = (self.base / "postgres.log").read_text(errors="replace")[-800:]
            self.stop()
            raise ServerUnavailable("PostgreSQL", f"server did not start: {tail}")

    def _accepting(self, timeout: float) -> bool:
        isready = self.bindir / "pg_isready"
        if not isready.exists():
            return self._pid_file_ready(timeout)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            done = subprocess.run([str(isready), "-h", "127.0.0.1", "-p", str(self.port), "-q"], check=False)
            if done.returncode == 0:
                return True
            time.sleep(0.1)
        return False

    def _pid_file_ready(self, timeout: float) -> bool:
        """Without pg_isready: the server writes its state into postmaster.pid's
        last line, `ready` once it accepts connections (`standby` as a hot standby)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with contextlib.suppress(OSError):
                lines = (self.datadir / "postmaster.pid").read_text().splitlines()
                if len(lines) >= 8 and lines[7].strip() in ("ready", "standby"):
                    return True
            if self.process is not None and self.process.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def stop(self, mode: signal.Signals = signal.SIGINT) -> None:
        """SIGINT: fast shutdown; SIGKILL: a crash."""
        process, self.process = self.process, None
        end_process(process, mode, timeout=30)
        if process is not None and mode == signal.SIGKILL:
            # Children of a killed postmaster exit on their own; wait for the port to free up.
            wait_port_free(self.port)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def start_postgres(
    settings: dict[str, str] | None = None,
    directory: str | None = None,
    *,
    bindir: Path | None = None,
    prefix: str = "orpycamcp-pg-",
) -> LocalPostgres:
    """A throwaway cluster in a new directory under `directory` (default: the temporary directory),
    of the server in `bindir` (default: Debian's)."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir=directory))
    server = LocalPostgres(
        base=base,
        port=free_port(),
        password=secrets.token_urlsafe(16),
        bindir=bindir if bindir is not None else postgres_bindir(),
        settings=settings or {},
    )
    try:
        server.init()
        server.start()
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    return server


@dataclass
class LocalRedis:
    base: Path
    port: int
    binary: str
    process: subprocess.Popen[bytes] | None = None
    extra_args: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 15.0) -> None:
        log = open(self.base / "redis.log", "ab")  # noqa: SIM115 -- kept open by the server process
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.base),
                *self.extra_args,
            ],
            stdout=log,
            stderr=log,
        )
        log.close()
        if not wait_for_port(self.port, timeout, self.process):
            tail = (self.base / "redis.log").read_text(errors="replace")[-800:]
            self.stop()
            raise ServerUnavailable("Redis", f"server did not start: {tail}")

    def stop(self, mode: signal.Signals = signal.SIGTERM) -> None:
        process, self.process = self.process, None
        end_process(process, mode, timeout=15)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


R = TypeVar("R", bound=LocalRedis)


def redis_binary() -> str:
    binary = os.environ.get("REDIS_SERVER") or shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).exists():
        raise ServerUnavailable("Redis", "redis-server not found (apt-get install redis-server, or set REDIS_SERVER)")
    return binary


def start_redis(
    kind: type[R] = LocalRedis,  # type: ignore[assignment]
    extra_args: tuple[str, ...] = (),
    port: int | None = None,
) -> R:
    """A throwaway Redis of class `kind` (a LocalRedis), started with `extra_args`, on
    `port` (default: a free one)."""
    base = Path(tempfile.mkdtemp(prefix="orpycamcp-redis-"))
    server = kind(base=base, port=port or free_port(), binary=redis_binary(), extra_args=extra_args)
    try:
        server.start()
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    return server
