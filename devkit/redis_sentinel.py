"""A throwaway Redis Sentinel deployment: a master, a replica and three sentinels
(`redis-server --sentinel` with a generated configuration), every one on
127.0.0.1 and a free port, quick to fail over (a master unanswering for 1 s is
down). Optionally with passwords: the data nodes' and the sentinels' own."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from devkit.redis_tls import TlsFiles
from devkit.servers import LocalRedis, Pausable, ServerUnavailable, free_port, wait_for_port
from exporter.tools import throwaway
from exporter.tools.throwaway import end_process, redis_binary

SERVICE = "mymaster"
# A master unheard for 3 s is down: at 1 s a sentinel on a loaded machine missed the
# new master's answers and failed over again, to the old master just restarted empty
# (demoted, not yet synchronised), which then had no consumer group at all.
DOWN_AFTER_MS = 3000
FAILOVER_TIMEOUT_MS = 6000


@dataclass
class SentinelProcess(Pausable):
    """One `redis-server --sentinel`; it rewrites its own configuration file."""

    base: Path
    port: int
    binary: str
    process: subprocess.Popen[bytes] | None = None

    def start(self, config: str, timeout: float = 15.0) -> None:
        path = self.base / "sentinel.conf"
        path.write_text(config)
        log = open(self.base / "sentinel.log", "ab")  # noqa: SIM115 -- kept open by the server process
        self.process = subprocess.Popen([self.binary, str(path), "--sentinel"], stdout=log, stderr=log)
        log.close()
        if not wait_for_port(self.port, timeout, self.process):
            tail = (self.base / "sentinel.log").read_text(errors="replace")[-800:]
            self.stop()
            raise ServerUnavailable("Redis Sentinel", f"sentinel did not start: {tail}")

    def stop(self, mode: signal.Signals = signal.SIGTERM) -> None:
        self.resume()
        process, self.process = self.process, None
        end_process(process, mode, timeout=15)


@dataclass
class SentinelDeployment:
    master: LocalRedis
    replica: LocalRedis
    sentinels: list[SentinelProcess]
    base: Path
    password: str | None = None
    sentinel_password: str | None = None
    tls: TlsFiles | None = None  # every server and sentinel on TLS only, with this certificate
    removed: list[LocalRedis] = field(default_factory=list)

    def url(self, service: str = SERVICE, with_sentinel_password: bool = True) -> str:
        """The exporter's redis+sentinel:// URL for `service` (rediss+sentinel:// with TLS)."""
        userinfo = f":{urllib.parse.quote(self.password, safe='')}@" if self.password else ""
        hosts = ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in self.sentinels)
        query = ""
        if self.sentinel_password and with_sentinel_password:
            query = f"?sentinel_password={urllib.parse.quote(self.sentinel_password, safe='')}"
        scheme = "rediss+sentinel" if self.tls else "redis+sentinel"
        return f"{scheme}://{userinfo}{hosts}/{service}{query}"

    def _tls_options(self) -> dict[str, str | bool]:
        if self.tls is None:
            return {}
        return {"ssl": True, "ssl_ca_certs": str(self.tls.ca)}

    def sentinel_client(self, index: int = 0) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1",
            port=self.sentinels[index].port,
            password=self.sentinel_password,
            decode_responses=True,
            socket_timeout=5,
            **self._tls_options(),  # type: ignore[arg-type]
        )

    def master_address(self, index: int = 0) -> tuple[str, int]:
        """The master as sentinel `index` names it now."""
        with self.sentinel_client(index) as client:
            host, port = client.sentinel_get_master_addr_by_name(SERVICE)
        return str(host), int(port)

    def data_client(self, port: int) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1",
            port=port,
            password=self.password,
            decode_responses=True,
            socket_timeout=5,
            **self._tls_options(),  # type: ignore[arg-type]
        )

    def wait(self, condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while not _holds(condition):
            if time.monotonic() > end:
                raise ServerUnavailable("Redis Sentinel", f"not ready within {timeout:g} s: {what}")
            time.sleep(0.1)

    def wait_ready(self) -> None:
        """The replica in sync and every sentinel seeing the master, the replica and its two peers."""

        def replica_linked() -> bool:
            with self.data_client(self.replica.port) as client:
                return bool(client.info("replication").get("master_link_status") == "up")

        def sentinels_know_all() -> bool:
            for index in range(len(self.sentinels)):
                with self.sentinel_client(index) as client:
                    state = client.sentinel_master(SERVICE)
                if int(state["num-slaves"]) < 1 or int(state["num-other-sentinels"]) < len(self.sentinels) - 1:
                    return False
            return True

        self.wait(replica_linked, "the replica's link to the master")
        self.wait(sentinels_know_all, "every sentinel knowing the replica and its peers")

    def remove(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in (self.master, self.replica, *self.removed):
            server.remove()
        shutil.rmtree(self.base, ignore_errors=True)


def _holds(condition: Callable[[], bool]) -> bool:
    try:
        return condition()
    except (redis.RedisError, OSError):
        return False


def _tls_settings(tls: TlsFiles | None, port: int) -> list[tuple[str, str]]:
    """TLS only, on `port`, replicating (and, for sentinels, watching) over TLS too."""
    if tls is None:
        return [("port", str(port))]
    return [
        ("port", "0"),
        ("tls-port", str(port)),
        ("tls-cert-file", str(tls.cert)),
        ("tls-key-file", str(tls.key)),
        ("tls-ca-cert-file", str(tls.ca)),
        ("tls-replication", "yes"),
        ("tls-auth-clients", "no"),
    ]


def _data_args(password: str | None, tls: TlsFiles | None, port: int) -> tuple[str, ...]:
    args = ["--enable-debug-command", "local"]
    if password is not None:
        args += ["--requirepass", password, "--masterauth", password]
    for name, value in _tls_settings(tls, port):
        args += [f"--{name}", value]
    return tuple(args)


def _start_data_node(password: str | None, tls: TlsFiles | None, *more: str) -> LocalRedis:
    port = free_port()
    # Later arguments win: with TLS, the plain port is turned off and `port` serves TLS.
    return throwaway.start_redis(LocalRedis, (*_data_args(password, tls, port), *more), port)


def sentinel_config(
    port: int, master_port: int, password: str | None, sentinel_password: str | None, tls: TlsFiles | None = None
) -> str:
    lines = [
        *(f"{name} {value}" for name, value in _tls_settings(tls, port)),
        "bind 127.0.0.1",
        "protected-mode no",
        f"sentinel monitor {SERVICE} 127.0.0.1 {master_port} 2",
        f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
        f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}",
        f"sentinel parallel-syncs {SERVICE} 1",
    ]
    if password is not None:
        lines.append(f"sentinel auth-pass {SERVICE} {password}")
    if sentinel_password is not None:
        # The sentinels' own password, which they also give each other.
        lines += [f"requirepass {sentinel_password}", f"sentinel sentinel-pass {sentinel_password}"]
    return "\n".join(lines) + "\n"


def start_sentinel_deployment(
    password: str | None = None, sentinel_password: str | None = None, sentinels: int = 3, tls: TlsFiles | None = None
) -> SentinelDeployment:
    """A master, its replica and `sentinels` sentinels monitoring it as SERVICE, ready;
    with `tls`, every one of them on TLS only."""
    base = Path(tempfile.mkdtemp(prefix="orpycamcp-sentinel-"))
    started: list[LocalRedis] = []
    processes: list[SentinelProcess] = []
    try:
        master = _start_data_node(password, tls)
        started.append(master)
        replica = _start_data_node(password, tls, "--replicaof", "127.0.0.1", str(master.port))
        started.append(replica)
        for index in range(sentinels):
            directory = base / f"sentinel-{index}"
            directory.mkdir()
            process = SentinelProcess(directory, free_port(), redis_binary())
            process.start(sentinel_config(process.port, master.port, password, sentinel_password, tls))
            processes.append(process)
        deployment = SentinelDeployment(master, replica, processes, base, password, sentinel_password, tls)
        deployment.wait_ready()
    except BaseException:
        for process in processes:
            process.stop()
        for server in started:
            server.remove()
        shutil.rmtree(base, ignore_errors=True)
        raise
    return deployment
