"""The container image, built from the Dockerfile and run on a real Docker
engine as users run it: its version, its user, its measurements against real
PostgreSQL and Redis containers, its health check wherever it listens, its
shutdown, and what its layers hold."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import httpx
import pytest
import redis as redis_client
from packaging.markers import Marker
from packaging.utils import canonicalize_name

from devkit.containers import ContainerPostgres, ContainerRedis, start_container_postgres, start_container_redis
from devkit.docker_engine import DockerEngine
from devkit.images import BuiltImage
from devkit.locks import pins
from devkit.servers import free_port
from exporter.tools.demo import EXPORTER_ROLE
from registry import SIGNALS, VERSION
from registry.values import ARTIFACTS, DEADLETTER_STREAMS, ORIGIN_GROUPS, PHASES, STREAM_GROUPS
from tests.platform import EXPORTER_PASSWORD, Platform, at, create_platform
from tests.scrapes import Page, parse
from tests.waits import wait_until_sync

from .conftest import REPORT
from .files import REPO_ROOT

USER = "65532:65532"
# Fast health checks for the tests; the test command itself is the image's (an empty test inherits it).
FAST_HEALTH = {"interval": 500_000_000, "timeout": 4_000_000_000, "retries": 2, "start_period": 0}


# --- servers and data ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(docker_engine: DockerEngine, server_images: dict[str, str]) -> Iterator[Any]:
    with contextlib.closing(docker_engine.client()) as engine_client:
        yield engine_client


@pytest.fixture(scope="module")
def postgres(server_images: dict[str, str]) -> Iterator[ContainerPostgres]:
    server = start_container_postgres()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture(scope="module")
def redis(server_images: dict[str, str]) -> Iterator[ContainerRedis]:
    server = start_container_redis()
    try:
        yield server
    finally:
        server.remove()


def bridge_ip(server: ContainerPostgres | ContainerRedis) -> str:
    wrapped = server.container.get_wrapped_container()
    wrapped.reload()
    address: str = wrapped.attrs["NetworkSettings"]["IPAddress"]
    assert address, "the server container has no address on the default bridge"
    return address


@dataclass(frozen=True)
class Stack:
    platform: Platform
    redis: ContainerRedis

    def bridge_env(self) -> dict[str, str]:
        """The URLs as a container on the default bridge reaches the servers."""
        postgres = self.platform.server
        assert isinstance(postgres, ContainerPostgres)
        database = f"postgresql://{EXPORTER_ROLE}:{EXPORTER_PASSWORD}@{bridge_ip(postgres)}:5432/"
        return {
            "DATABASE_URL": database + self.platform.database,
            "REDIS_URL": f"redis://{bridge_ip(self.redis)}:6379/0",
        }

    def host_env(self) -> dict[str, str]:
        """The URLs as a container on the host network reaches the servers (their published ports)."""
        return {"DATABASE_URL": self.platform.exporter_url, "REDIS_URL": self.redis.url}


PENDING_ID = "1700000000000-0"
DEADLETTER_ID = "1600000000000-0"


@pytest.fixture(scope="module")
def stack(postgres: ContainerPostgres, redis: ContainerRedis) -> Stack:
    """Two measured tenants and one not yet provisioned, an audit history, and Redis streams."""

    async def build() -> Platform:
        platform = await create_platform(postgres)
        for slug in ("acme", "globex"):
            await platform.add_tenant(slug)
        await platform.execute("INSERT INTO public.tenants VALUES ('initech', 'active', 'pending')")
        await platform.add_dead_letter("acme", "e1", "signature-service", "pending", at("2024-01-02 03:04:05"))
        await platform.add_dead_letter("acme", "e2", "signature-service", "pending", at("2024-01-01 00:00:00"))
        await platform.add_dead_letter("acme", "e3", "workflow-service", "resolved", at("2023-01-01 00:00:00"))
        await platform.add_dead_letter("globex", "e4", "signature-service", "pending", at("2024-03-01 00:00:00"))
        await platform.add_dead_letter("globex", "e5", "notification-service", "pending", at("2024-02-02 00:00:00"))
        await platform.add_retry("acme", "d1", "document", "renewal", "exhausted")
        await platform.add_retry("acme", "d2", "document", "renewal", "exhausted")
        await platform.add_retry("acme", "s1", "signature", "sealing", "retrying")
        await platform.add_retry("globex", "a1", "attachment", "fixity", "exhausted")
        await platform.add_audit_run("complete", at("2024-05-01 00:00:00"), 2, 1, False)
        await platform.add_audit_run("partial", at("2024-06-01 00:00:00"), 9, 0, True)
        return platform

    platform = asyncio.run(build())
    with redis_client.Redis.from_url(redis.url) as writer:
        for index, (stream, group) in enumerate(STREAM_GROUPS):
            writer.xgroup_create(stream, group, id="0", mkstream=True)
            if index == 0:
                writer.xadd(stream, {"event": "document.signed"}, id=PENDING_ID)
        first_stream, first_group = STREAM_GROUPS[0]
        writer.xreadgroup(first_group, "consumer", {first_stream: ">"}, count=1)
        writer.xadd(DEADLETTER_STREAMS[0], {"event": "document.signed"}, id=DEADLETTER_ID)
    return Stack(platform, redis)


# --- running the image --------------------------------------------------------------------------


def run_once(client: Any, image: BuiltImage, command: list[str], **options: Any) -> str:
    output: bytes = client.containers.run(image.tag, command, remove=True, stdout=True, stderr=True, **options)
    return output.decode()


@dataclass
class Exporter:
    container: Any
    url: str

    def health(self) -> str:
        self.container.reload()
        status: str = self.container.attrs["State"].get("Health", {}).get("Status", "none")
        return status

    def wait_health(self, wanted: str, timeout: float = 60) -> float:
        """Seconds until the health status is `wanted`; fails with the last probe's output otherwise."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.health() == wanted:
                return time.monotonic() - started
            time.sleep(0.1)
        probes = self.container.attrs["State"].get("Health", {}).get("Log", [])
        raise AssertionError(f"not {wanted} after {timeout} s: {self.health()}; probes {probes[-2:]}; {self.logs()}")

    def logs(self) -> str:
        return str(self.container.logs().decode(errors="replace")[-3000:])

    def scrape(self) -> Page:
        response = httpx.get(self.url + "/metrics", timeout=30)
        assert response.status_code == 200, response.text
        return parse(response.content)


@pytest.fixture
def start_exporter(client: Any, exporter_image: BuiltImage) -> Iterator[Any]:
    started: list[Any] = []

    def start(
        command: list[str],
        env: dict[str, str],
        port: int,
        host_network: bool = False,
        listen_port: int = 9874,
        options: dict[str, Any] | None = None,
    ) -> Exporter:
        options = {"environment": env, "healthcheck": FAST_HEALTH, "detach": True, **(options or {})}
        if host_network:
            options["network_mode"] = "host"
        else:
            options["ports"] = {f"{listen_port}/tcp": ("127.0.0.1", port)}
        container = client.containers.run(exporter_image.tag, command, **options)
        started.append(container)
        exporter = Exporter(container, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(exporter.url + "/-/healthy", timeout=1)
                return exporter
            except httpx.TransportError:
                container.reload()
                assert container.status == "running", exporter.logs()
                assert time.monotonic() < deadline, exporter.logs()
                time.sleep(0.1)

    yield start
    for container in started:
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True)


# --- what the image is ---------------------------------------------------------------------------


def test_version(client: Any, exporter_image: BuiltImage) -> None:
    assert run_once(client, exporter_image, ["--version"]) == f"orpycamcp-exporter {VERSION}\n"


def test_runs_as_the_unprivileged_numeric_user(client: Any, exporter_image: BuiltImage) -> None:
    assert client.images.get(exporter_image.tag).attrs["Config"]["User"] == USER
    ids = run_once(client, exporter_image, ["-c", "import os; print(os.getuid(), os.getgid())"], entrypoint="python3")
    assert ids == "65532 65532\n"


def test_holds_no_compiler_no_test_code_no_secret(client: Any, exporter_image: BuiltImage) -> None:
    script = (
        "import os, shutil, sysconfig;"
        "print([c for c in ('gcc', 'cc', 'c++', 'x86_64-linux-gnu-gcc', 'make') if shutil.which(c)]);"
        "print(sorted(p for p in ('/src', '/wheels', '/opt/venv/tests') if os.path.exists(p)));"
        "site = sysconfig.get_path('purelib');"
        "print(sorted(n for n in os.listdir(site) if n.startswith(('tests', 'devkit', 'bench', 'pip'))))"
    )
    found = run_once(client, exporter_image, ["-c", script], entrypoint="python3").splitlines()
    assert found == ["[]", "[]", "[]"]
    image = client.images.get(exporter_image.tag)
    env = image.attrs["Config"]["Env"]
    assert not [item for item in env if re.match(r"(DATABASE_URL|REDIS_URL|\w*PASSWORD\w*|\w*SECRET\w*)=", item)]
    history = [layer["CreatedBy"] for layer in image.history()]
    for line in history:
        assert not re.search(r"password|secret|token|DATABASE_URL", line, re.IGNORECASE), line
        assert "tests/" not in line, line
    venv = [layer["Size"] for layer in image.history() if "COPY dir:" in layer["CreatedBy"]]
    REPORT.append(f"image layers: the virtualenv layer is {venv[0] / 1e6:.1f} MB of {image.attrs['Size'] / 1e6:.1f} MB")


def test_the_sbom_lists_what_the_virtualenv_holds(client: Any, exporter_image: BuiltImage) -> None:
    """/opt/venv/sbom.cdx.json names every distribution the image's Python sees, at the locked versions."""
    script = (
        "import importlib.metadata as m, json, platform;"
        "print(json.dumps({'sbom': json.load(open('/opt/venv/sbom.cdx.json')), 'python': platform.python_version(),"
        " 'installed': {d.name: d.version for d in m.distributions()}}))"
    )
    found = json.loads(run_once(client, exporter_image, ["-c", script], entrypoint="python3"))
    sbom = found["sbom"]
    assert (sbom["bomFormat"], sbom["specVersion"]) == ("CycloneDX", "1.6")
    listed = {str(canonicalize_name(c["name"])): str(c["version"]) for c in sbom["components"]}
    installed = {str(canonicalize_name(name)): version for name, version in found["installed"].items()}
    assert listed == installed
    assert listed["orpycamcp-exporter"] == VERSION
    python = {"python_full_version": found["python"], "python_version": found["python"].rsplit(".", 1)[0]}
    locked = {
        str(canonicalize_name(pin.name)): pin.version
        for pin in pins((REPO_ROOT / "requirements" / "runtime.txt").read_text())
        if pin.marker is None or Marker(pin.marker).evaluate(python)
    }
    assert {name: version for name, version in listed.items() if name != "orpycamcp-exporter"} == locked
    REPORT.append(f"image SBOM: {len(listed)} components, Python {found['python']}")


# --- serving ------------------------------------------------------------------------------------------


def test_serve_measures_every_signal_exactly(stack: Stack, start_exporter: Any) -> None:
    port = free_port()
    exporter = start_exporter(["serve"], stack.bridge_env(), port)
    assert_exact(exporter.scrape(), exporter)


def test_serves_exact_values_restricted_like_the_kubernetes_deployment(
    stack: Stack, start_exporter: Any, tmp_path: Path
) -> None:
    """Read-only root filesystem, every capability dropped, no new privileges, a
    non-root user, the URLs read from files of a read-only mount with mode 0440
    (deploy/kubernetes/base/deployment.yaml): the same exact values."""
    urls = tmp_path / "urls"
    urls.mkdir()
    env = stack.bridge_env()
    for name, key in (("DATABASE_URL", "database-url"), ("REDIS_URL", "redis-url")):
        path = urls / key
        path.write_text(env[name] + "\n", encoding="utf-8")
        os.chown(path, 0, 65532)
        path.chmod(0o440)
    mounted = "/etc/orpycamcp/urls"
    restricted = {
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "user": USER,
        "volumes": {str(urls): {"bind": mounted, "mode": "ro"}},
    }
    file_env = {
        "ORPYCAMCP_DATABASE_URL_FILE": f"{mounted}/database-url",
        "ORPYCAMCP_REDIS_URL_FILE": f"{mounted}/redis-url",
    }
    exporter = start_exporter(["serve"], file_env, free_port(), options=restricted)
    host_config = exporter.container.attrs["HostConfig"]
    assert host_config["ReadonlyRootfs"] is True
    assert host_config["CapDrop"] == ["ALL"]
    assert host_config["SecurityOpt"] == ["no-new-privileges"]
    probe = "import os; print(os.getuid()); open('/opt/venv/written', 'w')"
    # stdout and stderr apart: interleaved, the traceback may come before the buffered uid
    result = exporter.container.exec_run(["python3", "-c", probe], demux=True)
    stdout, stderr = result.output
    assert result.exit_code != 0
    assert (stdout or b"").decode() == "65532\n"
    assert "Read-only file system" in (stderr or b"").decode()
    page = exporter.scrape()
    assert_exact(page, exporter)
    REPORT.append(
        "restricted container (--read-only --cap-drop ALL --security-opt no-new-privileges, user 65532, URLs from"
        f" files): {sum(page.measured(signal) for signal in SIGNALS)} of {len(SIGNALS)} signals measured, values exact"
    )


def assert_exact(page: Page, exporter: Exporter) -> None:
    """The stack's fixtures, measured exactly."""
    for signal in SIGNALS:
        assert page.measured(signal) == 1, f"{signal}: {exporter.logs()}"
    pending = {group: page.get("orpycamcp_dlq_pending_events", origin_group=group) for group in ORIGIN_GROUPS}
    assert pending == {"signature-service": 3, "workflow-service": 0, "notification-service": 1, "knowledge-service": 0}
    oldest = page.family("orpycamcp_dlq_oldest_pending_timestamp_seconds")
    assert oldest == {
        (("origin_group", "signature-service"),): at("2024-01-01 00:00:00").timestamp(),
        (("origin_group", "notification-service"),): at("2024-02-02 00:00:00").timestamp(),
    }
    exhausted = page.family("orpycamcp_preservation_exhausted_artifacts")
    assert len(exhausted) == len(ARTIFACTS) * len(PHASES)
    nonzero = {labels: value for labels, value in exhausted.items() if value}
    assert nonzero == {
        (("artifact", "document"), ("phase", "renewal")): 2,
        (("artifact", "attachment"), ("phase", "fixity")): 1,
    }
    assert page.get("orpycamcp_audit_chain_breaks") == 2
    assert page.get("orpycamcp_audit_chain_declared_breaks") == 1
    assert page.get("orpycamcp_audit_chain_verification_ok") == 0
    finished = at("2024-05-01 00:00:00").timestamp()
    assert page.get("orpycamcp_audit_chain_last_verification_timestamp_seconds") == finished
    pending_messages = page.family("orpycamcp_stream_pending_messages")
    only_first = {pair: (1 if pair == STREAM_GROUPS[0] else 0) for pair in STREAM_GROUPS}
    assert pending_messages == {(("group", group), ("stream", stream)): n for (stream, group), n in only_first.items()}
    stream, group = STREAM_GROUPS[0]
    assert page.family("orpycamcp_stream_oldest_pending_timestamp_seconds") == {
        (("group", group), ("stream", stream)): 1_700_000_000.0
    }
    entries = page.family("orpycamcp_deadletter_stream_entries")
    assert entries == {(("stream", name),): (1 if name == DEADLETTER_STREAMS[0] else 0) for name in DEADLETTER_STREAMS}
    assert page.family("orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds") == {
        (("stream", DEADLETTER_STREAMS[0]),): 1_600_000_000.0
    }
    assert page.get("orpycamcp_exporter_build_info", version=VERSION) == 1


# --- health -------------------------------------------------------------------------------------------


def test_healthy_on_the_default_port(stack: Stack, start_exporter: Any) -> None:
    exporter = start_exporter(["serve"], stack.bridge_env(), free_port())
    seconds = exporter.wait_health("healthy")
    REPORT.append(f"health, default :9874 (published): starting -> healthy in {seconds:.1f} s")


def test_healthy_on_a_listen_address_from_the_environment(stack: Stack, start_exporter: Any) -> None:
    env = stack.bridge_env() | {"ORPYCAMCP_LISTEN_ADDRESS": ":9999"}
    exporter = start_exporter(["serve"], env, free_port(), listen_port=9999)
    seconds = exporter.wait_health("healthy")
    REPORT.append(f"health, ORPYCAMCP_LISTEN_ADDRESS=:9999: starting -> healthy in {seconds:.1f} s")


def test_health_follows_a_listen_address_flag_and_the_exporter_answering(
    stack: Stack, start_exporter: Any, client: Any
) -> None:
    """Host network, a non-default address: healthy; frozen (SIGSTOP), unhealthy; thawed, healthy again."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    exporter = start_exporter(["serve", "--web.listen-address", address], stack.host_env(), port, host_network=True)
    to_healthy = exporter.wait_health("healthy")
    # Signals from the engine reach the container's process 1 (from inside, init ignores SIGSTOP).
    exporter.container.kill(signal="SIGSTOP")
    to_unhealthy = exporter.wait_health("unhealthy")
    with pytest.raises(httpx.TimeoutException):
        httpx.get(exporter.url + "/-/healthy", timeout=1)
    exporter.container.kill(signal="SIGCONT")
    back = exporter.wait_health("healthy")
    assert httpx.get(exporter.url + "/-/healthy", timeout=5).status_code == 200
    REPORT.append(
        f"health, --web.listen-address {address} (host network): starting -> healthy {to_healthy:.1f} s;"
        f" SIGSTOP -> unhealthy {to_unhealthy:.1f} s; SIGCONT -> healthy {back:.1f} s"
    )


# --- shutdown -------------------------------------------------------------------------------------------


def test_docker_stop_finishes_the_scrape_in_flight_and_exits_0(stack: Stack, start_exporter: Any) -> None:
    exporter = start_exporter(["serve"], stack.bridge_env(), free_port())
    # The lock is held by a session the test ends itself: taken before the scrape, released only
    # once the exporter has begun its graceful shutdown (its "Shutting down" line), so the scrape
    # is in flight at SIGTERM whatever the machine's load, and then answered within uvicorn's 4 s.
    locker = subprocess.Popen(
        ["psql", stack.platform.admin_url, "-v", "ON_ERROR_STOP=1", "-q"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert locker.stdin is not None
    locker.stdin.write("BEGIN;\nLOCK TABLE public.audit_chain_runs IN ACCESS EXCLUSIVE MODE;\n")
    locker.stdin.flush()
    stopper: threading.Thread | None = None
    try:
        held_query = (
            "SELECT count(*) FROM pg_locks WHERE relation = 'public.audit_chain_runs'::regclass"
            " AND mode = 'AccessExclusiveLock' AND granted"
        )
        waiting_query = (
            "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock' AND datname = $2"
        )

        async def count(query: str, *args: object) -> int:
            rows = await stack.platform.fetch(query, *args)
            return int(rows[0][0])

        assert wait_until_sync(lambda: asyncio.run(count(held_query)) > 0, 60), "the lock was never taken"

        result: dict[str, Any] = {}

        def scrape() -> None:
            result["response"] = httpx.get(exporter.url + "/metrics", timeout=60)

        scraper = threading.Thread(target=scrape)
        scraper.start()
        assert wait_until_sync(
            lambda: asyncio.run(count(waiting_query, EXPORTER_ROLE, stack.platform.database)) > 0, 60
        ), "the scrape never reached the locked table"
        started = time.monotonic()
        stopper = threading.Thread(target=lambda: exporter.container.stop(timeout=30))
        stopper.start()
        assert wait_until_sync(lambda: "Shutting down" in exporter.logs(), 60), "the exporter never began its shutdown"
    finally:
        _out, errors = locker.communicate("COMMIT;\n", timeout=60)
    assert stopper is not None
    stopper.join(timeout=60)
    stop_seconds = time.monotonic() - started
    scraper.join(timeout=60)
    assert locker.returncode == 0, errors
    exporter.container.reload()
    assert exporter.container.attrs["State"]["ExitCode"] == 0, exporter.logs()
    response = result["response"]
    assert response.status_code == 200
    page = parse(response.content)
    assert page.measured("audit_chain") == 1, f"after {stop_seconds:.2f} s: {exporter.logs()}"
    assert page.get("orpycamcp_audit_chain_breaks") == 2
    REPORT.append(f"docker stop with a scrape in flight: exit 0 after {stop_seconds:.2f} s, the scrape answered 200")
