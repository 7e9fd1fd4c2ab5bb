"""End to end: the dashboard reads only its own deployment, in a real Prometheus
where other jobs' series sit beside it.

Two demo exporters (each its own database, every signal and two declared
backlogs measured) are scraped by the deployment's job as clusters `east` and
`west`; the first is scraped once more by a foreign job (cluster `foreign`),
whose rules, rendered from the mixin with its own selector, record platform
totals of their own.
Prometheus also scrapes itself (`up{job="prometheus"}`, `process_*`, no cluster
label). Grafana's variables are resolved the way Grafana does (label_values of
their queries, "All" as the allValue or every value), then every panel query
runs with "All" selected and with one cluster selected: no series of another
job, cluster or instance comes back, and every cluster selected does.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devkit import mixin
from devkit.process import RunningProcess, http_get, running_process
from devkit.servers import free_port
from devkit.tools import tool
from tests.e2e.stack import evaluated_beside, prometheus_server, query, wait_for
from tests.grafana.test_dashboard import dashboard, targets

REPO = Path(__file__).resolve().parents[2]
BACKLOGS = REPO / "deploy" / "backlogs.example.yml"
JOB = "orpycamcp-exporter"
FOREIGN_JOB = "foreign-orpycamcp"
CLUSTERS = ("east", "west")
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*(\w+)\s*\)$", re.DOTALL)
REGEX_SPECIALS = re.compile(r"([\\^$*+?.()|{}\[\]])")
# Families this demo has no reason to emit: it reads primaries (no replica
# lag) and every signal is measured (no failure reason).
ABSENT_HERE = (
    "orpycamcp_database_replay_lag_seconds",
    "orpycamcp_redis_replica_lag_seconds",
    "failure_info",
    # The demo's dead-letter streams hold fewer than 101 entries, and Redis counts its groups' lag right.
    "orpycamcp_deadletter_stream_entry_101_timestamp_seconds",
    "orpycamcp_stream_undelivered_unknown{",
    # Only while the migration lock is held: no migration runs here.
    "orpycamcp_migration_lock_holder_session_start",
)


@contextmanager
def demo_exporter(folder: Path) -> Iterator[RunningProcess]:
    folder.mkdir()
    port = free_port()
    command = [sys.executable, "-m", "exporter", "demo", "--backlogs.config-file", str(BACKLOGS)]
    command += ["--web.listen-address", f"127.0.0.1:{port}"]

    def serving() -> bool:
        try:
            return http_get(f"http://127.0.0.1:{port}/metrics", timeout=15).status_code == 200
        except httpx.TransportError:
            return False

    with running_process(command, port, folder / "demo.log", serving, timeout=90) as running:
        yield running


RULES_CONFIGS: tuple[dict[str, Any], ...] = ({}, {"orpycamcpSelector": f'job="{FOREIGN_JOB}"'})


def recording_rules(path: Path, config: Mapping[str, Any]) -> Path:
    """The mixin's recording rules for `config`, evaluated every second, warm-up shortened."""
    rendering = mixin.evaluate(shortened_warm_up(config))
    groups = [{"name": g["name"], "interval": "1s", "rules": g["rules"]} for g in rendering.rules["groups"]]
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def shortened_warm_up(config: Mapping[str, Any]) -> dict[str, Any]:
    return {**config, "totalsWarmUp": "1s"}


@contextmanager
def prometheus_with_neighbours(instances: Mapping[str, str], label: str, folder: Path) -> Iterator[RunningProcess]:
    """Prometheus scraping each cluster's exporter (`instances`), the first once more as the foreign job."""
    port = free_port()
    document = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [
            str(recording_rules(folder / f"{name}.rules.yml", config))
            for name, config in zip(("own", "foreign"), RULES_CONFIGS, strict=True)
        ],
        "scrape_configs": [
            {
                "job_name": JOB,
                "static_configs": [
                    {"targets": [target], "labels": {label: name}} for name, target in instances.items()
                ],
            },
            {
                "job_name": FOREIGN_JOB,
                "static_configs": [{"targets": [instances[CLUSTERS[0]]], "labels": {label: "foreign"}}],
            },
            {"job_name": "prometheus", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]},
        ],
    }
    with prometheus_server(document, folder, port=port) as running:
        yield running


# --- Grafana's variables ----------------------------------------------------------


def regex_value(value: str) -> str:
    """A value of a multi-value variable as Grafana puts it in a PromQL regex string."""
    return REGEX_SPECIALS.sub(r"\\\\\1", value)


def interpolate(expr: str, values: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in values:
            pytest.fail(f"unknown dashboard variable ${name} in {expr!r}")
        return values[name]

    return VARIABLE.sub(replace, expr)


def label_values(prom: RunningProcess, selector: str, label: str) -> list[str]:
    response = http_get(prom.url + "/api/v1/series", params={"match[]": selector}, timeout=10)
    response.raise_for_status()
    return sorted({series[label] for series in response.json()["data"] if label in series})


def resolve(prom: RunningProcess, chosen: Mapping[str, str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Each query variable's options and value in order: `chosen` values, else "All"."""
    values = {"__rate_interval": "15s"}
    options: dict[str, list[str]] = {}
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] != "query":
            continue
        name = variable["name"]
        match = LABEL_VALUES.match(variable["query"]["query"].strip())
        assert match, variable["query"]
        options[name] = label_values(prom, interpolate(match.group(1), values), match.group(2))
        if name in chosen:
            assert chosen[name] in options[name], (name, options[name])
            values[name] = regex_value(chosen[name])
        elif "allValue" in variable:
            values[name] = variable["allValue"]
        else:
            values[name] = "(" + "|".join(regex_value(option) for option in options[name]) + ")"
    return values, options


# --- the test ---------------------------------------------------------------------


Answer = tuple[str, list[dict[str, str]]]


def series_of(prom: RunningProcess, values: Mapping[str, str]) -> list[Answer]:
    """Each panel query (its panel's title and refId) with the labels of the series it returns."""
    return [
        (f"{panel['title']} {target['refId']}", [s["metric"] for s in query(prom, interpolate(target["expr"], values))])
        for panel, target in targets()
    ]


def answers(prom: RunningProcess, values: Mapping[str, str], may_be_empty: set[str]) -> list[Answer]:
    """Every panel query's series, once every query the demo has data for answers
    (not vacuous; on a loaded machine a refresh may lag)."""
    deadline = time.monotonic() + 30
    while True:
        results = series_of(prom, values)
        missing = [panel for panel, found in results if not found and panel not in may_be_empty]
        if not missing:
            return results
        if time.monotonic() > deadline:
            raise AssertionError(f"panel queries without data: {missing}")
        time.sleep(0.5)


def foreign(labels: Mapping[str, str], label: str, instances: Mapping[str, str], clusters: set[str]) -> bool:
    """A series of another job, or of a cluster or instance not selected."""
    selected = {instances[name] for name in clusters}
    return (
        labels.get("job", JOB) != JOB
        or labels.get("instance", next(iter(selected))) not in selected
        or labels.get(label, next(iter(clusters))) not in clusters
        or labels.get("cluster_artifact", next(iter(clusters))).split(" / ")[0] not in clusters
    )


def test_the_dashboard_shows_only_its_own_deployment(tmp_path: Path) -> None:
    tool("jsonnet")
    config = mixin.default_config()
    label = str(config["clusterLabel"])
    with ExitStack() as stack:
        evaluated = evaluated_beside(stack, *map(shortened_warm_up, RULES_CONFIGS))
        ports = [stack.enter_context(demo_exporter(tmp_path / name)).port for name in CLUSTERS]
        instances = {name: f"127.0.0.1:{port}" for name, port in zip(CLUSTERS, ports, strict=True)}
        evaluated()
        prom = stack.enter_context(prometheus_with_neighbours(instances, label, tmp_path))

        # Both deployments' platform totals are recorded, and Prometheus' own series are there.
        def recorded() -> set[str]:
            jobs = {s["metric"]["job"] for s in query(prom, "orpycamcp:backlog_pending_items:total")}
            jobs |= {s["metric"]["job"] for s in query(prom, "orpycamcp:dlq_oldest_pending_timestamp_seconds:total")}
            return jobs | {s["metric"]["job"] for s in query(prom, 'up{job="prometheus"} == 1')}

        wait_for(lambda: recorded() == {JOB, FOREIGN_JOB, "prometheus"}, 90, lambda: (recorded(), prom.log()[-2000:]))

        # The variables list this deployment only, and each follows the ones before it.
        _, options = resolve(prom, {})
        assert options == {
            "job": [JOB],
            "cluster": list(CLUSTERS),
            "instance": sorted(instances.values()),
            "backlog": ["kyc_dead_letters", "outbox"],
        }
        assert resolve(prom, {"cluster": "east"})[1]["instance"] == [instances["east"]]

        # Queries the demo may have no data for: replica lag, failure reasons.
        may_be_empty = {
            f"{panel['title']} {target['refId']}"
            for panel, target in targets()
            if any(part in target["expr"] for part in ABSENT_HERE)
        }
        for chosen, clusters in (({}, set(CLUSTERS)), ({"cluster": "east"}, {"east"})):
            values, _ = resolve(prom, chosen)
            results = answers(prom, values, may_be_empty)
            leaked = [(panel, s) for panel, found in results for s in found if foreign(s, label, instances, clusters)]
            assert leaked == [], (chosen, leaked)
            seen = {s[label] for _, found in results for s in found if label in s}
            assert seen == clusters, chosen

        # The same queries without the deployment's selector would show the neighbours:
        # this test sees a leak when there is one.
        values, _ = resolve(prom, {})
        selector = str(config["orpycamcpSelector"]) + ", "
        unscoped = [
            [s["metric"] for s in query(prom, interpolate(target["expr"].replace(selector, ""), values))]
            for _, target in targets()
        ]
        leaking = [found for found in unscoped if any(foreign(s, label, instances, set(CLUSTERS)) for s in found)]
        assert len(leaking) > len(unscoped) // 2, len(leaking)
        everything = interpolate('orpycamcp_exporter_build_info{job=~"$job"}', values)
        assert set(label_values(prom, everything, label)) == {*CLUSTERS, "foreign"}
