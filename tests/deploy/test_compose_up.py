"""The compose example brought up for real on the session's Docker engine:
the exporter built from the Dockerfile, PostgreSQL with the example's init
scripts and Redis with its demo streams, then /metrics read through the
compose network by the exporter's service name.

Run with Debian's docker-compose (1.29), which reads the file once the
top-level `name:` is left out (the project name is given on the command line
instead), and with these changes, made to a copy: the server images are the
ones built here, the exporter is built on the session's python image (offline,
from the wheelhouse), no port is published on the host (the test reads through
the compose network), and the exporter's health is checked every second. The
Prometheus, Alertmanager and Grafana services are not brought up: no registry
serves their images here."""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devkit.images import BuiltImage
from devkit.tools import tool
from registry import SIGNALS
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS
from tests.scrapes import parse

from .conftest import REPORT
from .files import COMPOSE_FILE, DEPLOY_DIR, compose

EXPORTER = "orpycamcp-exporter"
BROUGHT_UP = (EXPORTER, "postgres", "redis", "redis-demo-streams")


def absolute(volume: str) -> str:
    source, rest = volume.split(":", 1)
    if source.startswith("."):
        source = str((DEPLOY_DIR / source).resolve())
    return f"{source}:{rest}"


def derived_compose(server_images: dict[str, str], exporter_tag: str) -> dict[str, Any]:
    document = compose()
    document.pop("name", None)
    services = document["services"]
    for name in list(services):
        if name not in BROUGHT_UP:
            del services[name]
    for name, definition in services.items():
        definition.pop("ports", None)
        definition["volumes"] = [absolute(volume) for volume in definition.get("volumes", [])]
        if not definition["volumes"]:
            del definition["volumes"]
        if name != EXPORTER:
            definition["image"] = server_images["postgres" if name == "postgres" else "redis"]
    exporter = services[EXPORTER]
    exporter["build"]["context"] = str((DEPLOY_DIR / exporter["build"]["context"]).resolve())
    exporter["build"]["args"] = {"BASE_IMAGE": server_images["python"]}
    exporter["image"] = exporter_tag
    exporter["healthcheck"] = {"interval": "1s", "timeout": "4s", "retries": 3, "start_period": "0s"}
    document["volumes"] = {"postgres-data": None}
    return document


@pytest.fixture(scope="module")
def stack(server_images: dict[str, str], exporter_image: BuiltImage, tmp_path_factory: Any) -> Iterator[list[str]]:
    binary = tool("docker-compose")
    directory: Path = tmp_path_factory.mktemp("compose")
    file = directory / "docker-compose.yml"
    file.write_text(yaml.safe_dump(derived_compose(server_images, exporter_image.tag), sort_keys=False))
    project = f"orpycamcp-test-{secrets.token_hex(3)}"
    # The classic builder: BuildKit would fetch its frontend from a registry.
    env = dict(os.environ, COMPOSE_DOCKER_CLI_BUILD="0", DOCKER_BUILDKIT="0")
    command = [binary, "--project-name", project, "--file", str(file)]

    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)

    try:
        up = run("up", "--detach", "--build", *BROUGHT_UP)
        assert up.returncode == 0, up.stdout + up.stderr
        yield [*command]
    finally:
        logs = run("logs", "--no-color", timeout=60)
        down = run("down", "--volumes", "--remove-orphans", timeout=120)
        assert down.returncode == 0, down.stderr + logs.stdout[-3000:]


def container_of(client: Any, project: str, service: str) -> Any:
    (found,) = client.containers.list(
        all=True, filters={"label": [f"com.docker.compose.project={project}", f"com.docker.compose.service={service}"]}
    )
    return found


def wait_healthy(container: Any, timeout: float = 120) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        container.reload()
        status: str = container.attrs["State"].get("Health", {}).get("Status", "none")
        if status == "healthy":
            return status
        time.sleep(0.5)
    return str(container.attrs["State"].get("Health"))


def test_the_example_stack_is_healthy_and_measures_every_signal(
    stack: list[str], docker_engine: Any, server_images: dict[str, str]
) -> None:
    project = stack[stack.index("--project-name") + 1]
    client = docker_engine.client()
    try:
        for service in ("postgres", "redis", EXPORTER):
            assert wait_healthy(container_of(client, project, service)) == "healthy", service
        streams = container_of(client, project, "redis-demo-streams")
        assert streams.wait(timeout=60)["StatusCode"] == 0
        assert streams.logs().decode().strip() == "demo streams loaded"
        (network,) = client.networks.list(filters={"label": f"com.docker.compose.project={project}"})
        fetch = "import urllib.request, sys; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1]).read())"
        body: bytes = client.containers.run(
            server_images["python"],
            ["python3", "-c", fetch, f"http://{EXPORTER}:9874/metrics"],
            network=network.name,
            remove=True,
        )
    finally:
        client.close()
    page = parse(body)
    for signal in SIGNALS:
        assert page.measured(signal) == 1, signal
    # exporter/contract/demo.sql: acme 2 + globex 1 pending signature-service dead letters.
    assert page.get("orpycamcp_dlq_pending_events", origin_group="signature-service") == 3
    assert page.get("orpycamcp_stream_pending_messages", stream=STREAM_GROUPS[0][0], group=STREAM_GROUPS[0][1]) == 1
    assert page.get("orpycamcp_deadletter_stream_entries", stream=DEADLETTER_STREAMS[0]) == 1
    REPORT.append(
        f"compose ({COMPOSE_FILE.name}, docker-compose 1.29): postgres, redis, {EXPORTER} healthy;"
        " /metrics through the compose network: every signal measured"
    )
