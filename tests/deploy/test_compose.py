"""The docker compose example: every file it mounts exists, the services find
each other on the right names and ports, Prometheus' config passes promtool,
and the PostgreSQL and Redis init scripts, run as the images would run them,
give an exporter that measures every signal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devkit.process import exporter_process
from devkit.servers import PostgresServer, RedisServer, postgres_bindir, postgres_server, redis_server
from exporter.settings import DEFAULT_PORT, OPTIONS_BY_NAME
from exporter.timeouts import Timeouts, header_wait
from registry import SIGNALS
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS
from tests.scrapes import parse

from .files import (
    COMPOSE_FILE,
    DEPLOY_DIR,
    REPO_ROOT,
    bind_mounts,
    command_flag,
    compose,
    container_ports,
    host_path,
    interpolate,
    mount_target,
    service,
    tool,
)

EXPORTER = "orpycamcp-exporter"
RULES = REPO_ROOT / "alerts" / "orpycamcp.rules.yml"
ALERTMANAGER_CONFIG = REPO_ROOT / "alerts" / "alertmanager.example.yml"
GRAFANA = REPO_ROOT / "grafana"
REPO_DATASOURCE = GRAFANA / "provisioning" / "datasources" / "prometheus.yaml"
DASHBOARD_PROVIDER = GRAFANA / "provisioning" / "dashboards" / "orpycamcp.yaml"
DASHBOARD = GRAFANA / "dashboards" / "orpycamcp-overview.json"
PROMETHEUS_PORT = 9090
ALERTMANAGER_PORT = 9093
INITDB = "/docker-entrypoint-initdb.d/"


def parse_duration(text: str) -> float:
    """A Prometheus duration (`15s`, `1m30s`, `500ms`) in seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", text)
    assert parts, text
    assert "".join(number + unit for number, unit in parts) == text, text
    return sum(int(number) * units[unit] for number, unit in parts)


def load_yaml(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    assert isinstance(document, dict), path
    return document


def prometheus_config() -> dict[str, Any]:
    definition = service("prometheus")
    return load_yaml(host_path(definition, command_flag(definition, "--config.file")))


def scrape_job(name: str) -> dict[str, Any]:
    for job in prometheus_config()["scrape_configs"]:
        if job["job_name"] == name:
            assert isinstance(job, dict)
            return job
    raise AssertionError(f"Prometheus has no scrape job {name!r}")


def environment(definition: dict[str, Any]) -> dict[str, str]:
    raw = definition.get("environment", {})
    assert isinstance(raw, dict), "environment is written as a mapping"
    return {str(key): interpolate(str(value)) for key, value in raw.items()}


# --- files ---------------------------------------------------------------------------


def test_every_referenced_file_exists() -> None:
    """Bind-mount sources and the build context; the alerts/ and grafana/ ones included."""
    missing: list[str] = []
    for name, definition in compose()["services"].items():
        for mount in bind_mounts(definition):
            if not mount.source.exists():
                missing.append(f"{name}: {mount.source.relative_to(REPO_ROOT)}")
    assert not missing, f"{COMPOSE_FILE.name} mounts files that do not exist: {missing}"
    build = service(EXPORTER)["build"]
    assert (DEPLOY_DIR / build["context"]).resolve() == REPO_ROOT
    assert (REPO_ROOT / build["dockerfile"]).is_file()


def test_the_expected_repository_files_are_mounted() -> None:
    expected = {
        "prometheus": [RULES, DEPLOY_DIR / "prometheus" / "prometheus.yml"],
        "alertmanager": [ALERTMANAGER_CONFIG],
        "grafana": [GRAFANA / "provisioning" / "dashboards", GRAFANA / "dashboards"],
        "postgres": [REPO_ROOT / "exporter" / "contract" / name for name in ("contract.sql", "demo.sql", "grants.sql")],
    }
    for name, sources in expected.items():
        mounted = {mount.source for mount in bind_mounts(service(name))}
        for source in sources:
            assert source.resolve() in mounted, f"{name} does not mount {source.relative_to(REPO_ROOT)}"


def test_every_service_image_is_pinned() -> None:
    for name, definition in compose()["services"].items():
        if "build" in definition:
            continue
        image = definition["image"]
        assert ":" in image, f"{name}: {image} is not pinned by tag"
        assert not image.endswith(":latest"), f"{name}: {image} is not pinned by tag"
    assert service("postgres")["image"].startswith("postgres:15")
    assert service("redis")["image"].startswith("redis:7")


def test_published_ports_are_local_only() -> None:
    for name, definition in compose()["services"].items():
        for port in definition.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond this machine"


# --- exporter and Prometheus -----------------------------------------------------------


def test_exporter_listens_on_the_default_port() -> None:
    definition = service(EXPORTER)
    assert container_ports(definition) == [DEFAULT_PORT]
    env = environment(definition)
    assert not set(OPTIONS_BY_NAME["web_listen_address"].envs) & set(env)
    assert "--web.listen-address" not in definition.get("command", [])


def test_exporter_database_and_redis_urls_name_the_services() -> None:
    env = environment(service(EXPORTER))
    database = urllib.parse.urlsplit(env["DATABASE_URL"])
    assert (database.hostname, database.port) == ("postgres", 5432)
    assert database.username == "orpycamcp_exporter", "the read-only role of exporter/contract/grants.sql"
    assert database.path == "/" + environment(service("postgres"))["POSTGRES_DB"]
    assert database.password == environment(service("postgres"))["ORPYCAMCP_EXPORTER_PASSWORD"]
    redis_url = urllib.parse.urlsplit(env["REDIS_URL"])
    assert (redis_url.hostname, redis_url.port) == ("redis", 6379)


def test_prometheus_scrapes_the_exporter_service() -> None:
    job = scrape_job(EXPORTER)
    targets = [target for static in job["static_configs"] for target in static["targets"]]
    assert targets == [f"{EXPORTER}:{DEFAULT_PORT}"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    # The rules select this job by name.
    assert set(re.findall(r'job="([^"]+)"', RULES.read_text())) == {EXPORTER}


def test_scrape_timeout_below_interval_and_above_the_deadline() -> None:
    """A measurement that takes the whole deadline (and the scrape's grace after
    it) must fit in the wait a scrape with the configured timeout is given."""
    config = prometheus_config()
    job = scrape_job(EXPORTER)
    interval = parse_duration(job.get("scrape_interval", config["global"]["scrape_interval"]))
    timeout = parse_duration(job.get("scrape_timeout", config["global"]["scrape_timeout"]))
    option = OPTIONS_BY_NAME["deadline"]
    assert option.default is not None
    exporter_env = environment(service(EXPORTER))
    deadline = float(next((exporter_env[name] for name in option.envs if name in exporter_env), option.default))
    assert timeout < interval
    timeouts = Timeouts(deadline)
    assert timeouts.bounded_wait(header_wait(timeout)) >= timeouts.scrape_budget


def test_rule_files_are_the_mounted_rules() -> None:
    definition = service("prometheus")
    rule_files = prometheus_config()["rule_files"]
    assert rule_files == [mount_target(definition, RULES)]
    for rule_file in rule_files:
        assert host_path(definition, rule_file) == RULES.resolve()


def test_prometheus_alerts_the_alertmanager_service() -> None:
    targets = [
        target
        for manager in prometheus_config()["alerting"]["alertmanagers"]
        for static in manager["static_configs"]
        for target in static["targets"]
    ]
    assert targets == [f"alertmanager:{ALERTMANAGER_PORT}"]
    assert ALERTMANAGER_PORT in container_ports(service("alertmanager"))
    assert PROMETHEUS_PORT in container_ports(service("prometheus"))


def test_alertmanager_loads_the_example_config() -> None:
    definition = service("alertmanager")
    assert command_flag(definition, "--config.file") == mount_target(definition, ALERTMANAGER_CONFIG)


def test_promtool_accepts_the_prometheus_config(tmp_path: Path) -> None:
    """promtool checks the config and the rule files it loads, read from their mounted sources."""
    definition = service("prometheus")
    assert RULES.exists(), f"{RULES.relative_to(REPO_ROOT)} is missing"
    config = prometheus_config()
    config["rule_files"] = [str(host_path(definition, path)) for path in config["rule_files"]]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [tool("promtool"), "check", "config", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_amtool_accepts_the_mounted_alertmanager_config() -> None:
    definition = service("alertmanager")
    source = host_path(definition, command_flag(definition, "--config.file"))
    result = subprocess.run(
        [tool("amtool"), "check-config", str(source)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- Grafana ---------------------------------------------------------------------------


def provisioned_datasources() -> list[dict[str, Any]]:
    definition = service("grafana")
    directory = host_path(definition, "/etc/grafana/provisioning/datasources")
    files = sorted(directory.glob("*.y*ml"))
    assert files, f"no data source is provisioned from {directory}"
    return [source for file in files for source in load_yaml(file)["datasources"]]


def test_grafana_datasource_is_the_prometheus_service() -> None:
    (datasource,) = provisioned_datasources()
    url = urllib.parse.urlsplit(datasource["url"])
    assert (url.hostname, url.port) == ("prometheus", PROMETHEUS_PORT)
    assert datasource["type"] == "prometheus"


def test_grafana_datasource_matches_the_repository_one() -> None:
    """Same name, uid and type as grafana/provisioning/datasources/prometheus.yaml; only the URL differs."""
    (ours,) = provisioned_datasources()
    (theirs,) = load_yaml(REPO_DATASOURCE)["datasources"]
    for key in ("name", "uid", "type", "isDefault"):
        assert ours.get(key) == theirs.get(key), key


def test_grafana_dashboard_finds_its_datasource() -> None:
    """Every panel's data source is the dashboard's Prometheus variable, or a provisioned uid."""
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {
        variable["name"]
        for variable in dashboard.get("templating", {}).get("list", [])
        if variable.get("type") == "datasource" and variable.get("query") == "prometheus"
    }
    uids = {source["uid"] for source in provisioned_datasources()}
    used: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            source = node.get("datasource")
            if isinstance(source, dict) and "uid" in source and source.get("type") != "grafana":
                used.add(str(source["uid"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(dashboard.get("panels", []))
    assert used, "the dashboard's panels name no data source"
    accepted = uids | {f"${{{name}}}" for name in variables} | {f"${name}" for name in variables}
    assert used <= accepted, f"data sources {sorted(used - accepted)} are neither provisioned nor a variable"


def test_grafana_dashboards_are_mounted_where_the_provider_reads() -> None:
    definition = service("grafana")
    (provider,) = load_yaml(DASHBOARD_PROVIDER)["providers"]
    assert provider["options"]["path"] == mount_target(definition, GRAFANA / "dashboards")
    assert host_path(definition, "/etc/grafana/provisioning/dashboards") == DASHBOARD_PROVIDER.parent.resolve()
    assert host_path(definition, provider["options"]["path"]) == DASHBOARD.parent.resolve()


# --- init scripts, run for real ------------------------------------------------------------


def initdb_scripts() -> list[Path]:
    """The scripts /docker-entrypoint-initdb.d runs, in its order (file name order)."""
    mounts = [mount for mount in bind_mounts(service("postgres")) if mount.target.startswith(INITDB)]
    return [mount.source for mount in sorted(mounts, key=lambda mount: mount.target)]


def test_initdb_order_is_contract_demo_grants_password() -> None:
    names = [path.relative_to(REPO_ROOT).as_posix() for path in initdb_scripts()]
    assert names == [
        "exporter/contract/contract.sql",
        "exporter/contract/demo.sql",
        "exporter/contract/grants.sql",
        "deploy/postgres/99-exporter-password.sql",
    ]


def test_redis_demo_streams_are_the_registered_ones() -> None:
    script = (DEPLOY_DIR / "redis" / "demo-streams.sh").read_text()
    pairs = tuple(tuple(pair.split(":")) for pair in re.findall(r"^\s+(orpycamcp\.[\w.]+:[\w-]+)", script, re.M))
    assert pairs == STREAM_GROUPS
    assert set(re.findall(r"XADD (orpycamcp\.\w+\.deadletter)", script)) <= set(DEADLETTER_STREAMS)
    definition = service("redis-demo-streams")
    assert host_path(definition, definition["entrypoint"][-1]) == (DEPLOY_DIR / "redis" / "demo-streams.sh").resolve()


@pytest.fixture(scope="module")
def private_postgres() -> Iterator[PostgresServer]:
    """A cluster of its own: the init scripts set the cluster-wide exporter role's password."""
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def private_redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


def psql(server: PostgresServer, database: str, *args: str, env: dict[str, str] | None = None) -> str:
    """psql as the postgres image's entrypoint runs it on the init scripts."""
    command = [str(postgres_bindir() / "psql"), "-v", "ON_ERROR_STOP=1", "--no-psqlrc", "-X", "-q"]
    command += ["-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres", "-d", database, *args]
    full_env = {**os.environ, **(env or {}), "PGPASSWORD": server.password}
    result = subprocess.run(command, env=full_env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"{args}: {result.stderr}"
    return result.stdout


def test_password_script_fails_without_the_variable(private_postgres: PostgresServer) -> None:
    script = DEPLOY_DIR / "postgres" / "99-exporter-password.sql"
    env = {key: value for key, value in os.environ.items() if key != "ORPYCAMCP_EXPORTER_PASSWORD"}
    command = [str(postgres_bindir() / "psql"), "-v", "ON_ERROR_STOP=1", "--no-psqlrc", "-X", "-q"]
    command += ["-h", "127.0.0.1", "-p", str(private_postgres.port), "-U", "postgres", "-d", "postgres"]
    command += ["-f", str(script)]
    result = subprocess.run(
        command,
        env={**env, "PGPASSWORD": private_postgres.password},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "ORPYCAMCP_EXPORTER_PASSWORD is not set" in result.stderr


def test_the_stack_measures_every_signal(
    private_postgres: PostgresServer, private_redis: RedisServer, tmp_path: Path
) -> None:
    """The init scripts in compose order, then the exporter with the compose URLs,
    their hosts mapped to the local servers."""
    postgres_env = environment(service("postgres"))
    database = postgres_env["POSTGRES_DB"]
    psql(private_postgres, "postgres", "-c", f'CREATE DATABASE "{database}"')
    for script in initdb_scripts():
        psql(private_postgres, database, "-f", str(script), env=postgres_env)

    script = host_path(service("redis-demo-streams"), service("redis-demo-streams")["entrypoint"][-1])
    redis_env = {**os.environ, "REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(private_redis.port)}
    for expected in ("demo streams loaded", "demo streams already loaded"):
        done = subprocess.run(
            ["sh", str(script)], env=redis_env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected

    exporter_env = environment(service(EXPORTER))
    local = {
        "DATABASE_URL": exporter_env["DATABASE_URL"].replace("@postgres:5432/", f"@127.0.0.1:{private_postgres.port}/"),
        "REDIS_URL": exporter_env["REDIS_URL"].replace("//redis:6379/", f"//127.0.0.1:{private_redis.port}/"),
    }
    assert local["DATABASE_URL"] != exporter_env["DATABASE_URL"]
    assert local["REDIS_URL"] != exporter_env["REDIS_URL"]
    with exporter_process([], tmp_path, env=local) as running:
        response = httpx.get(running.url + "/metrics", timeout=30)
        assert response.status_code == 200
        page = parse(response.content)
    for signal in SIGNALS:
        assert page.measured(signal) == 1, f"{signal} is not measured: {running.log()}"
    # exporter/contract/demo.sql: acme 2 + globex 1 pending signature-service dead letters (initech is not provisioned).
    assert page.get("orpycamcp_dlq_pending_events", origin_group="signature-service") == 3
    assert page.get("orpycamcp_stream_pending_messages", stream=STREAM_GROUPS[0][0], group=STREAM_GROUPS[0][1]) == 1
    assert page.get("orpycamcp_deadletter_stream_entries", stream=DEADLETTER_STREAMS[0]) == 1
