"""The Grafana overview dashboard, its provisioning, and metric names against the registry.

The lint checks reproduce those of grafana/dashboard-linter: template-datasource-rule,
template-job-rule, template-instance-rule, panel-datasource-rule, target-job-rule,
target-instance-rule, panel-units-rule and panel-title-description-rule.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devkit import mixin
from devkit.tools import tool
from registry import FAMILIES
from registry.backlogs import ARRIVALS, ARRIVALS_THRESHOLD, ITEMS, OLDEST_PENDING, PENDING_ITEMS

from .promql import Matcher, PromQLSyntaxError, Selector, metric_names, selectors

REPO_ROOT = Path(__file__).resolve().parents[2]
DASHBOARD_PATH = REPO_ROOT / "grafana" / "dashboards" / "orpycamcp-overview.json"
DASHBOARD_PROVISIONING = REPO_ROOT / "grafana" / "provisioning" / "dashboards" / "orpycamcp.yaml"
DATASOURCE_PROVISIONING = REPO_ROOT / "grafana" / "provisioning" / "datasources" / "prometheus.yaml"
RULES_PATH = REPO_ROOT / "alerts" / "orpycamcp.rules.yml"

PANEL_TYPES = frozenset({"stat", "timeseries", "table", "state-timeline"})
TEMPLATED_DATASOURCES = frozenset({"$datasource", "${datasource}"})
# Prometheus' own series the dashboard and the rules may use besides the registry.
PROMETHEUS_SERIES = frozenset({"up"})
# Declared backlogs' families: the registry is extended with them at start from
# the backlogs configuration file, so they are not in its static table.
BACKLOG_FAMILIES = frozenset({PENDING_ITEMS, OLDEST_PENDING, ITEMS, ARRIVALS, ARRIVALS_THRESHOLD})
# Recorded over every cluster: the platform totals, and the counts that gate them.
PLATFORM_RECORD = re.compile(r"^orpycamcp:[a-z0-9_]+:(total|count)$")
# Grafana's unit ids (valueFormats/categories.ts), the subset relevant to an exporter.
VALID_UNITS = frozenset(
    {
        "none",
        "string",
        "short",
        "percent",
        "percentunit",
        "sci",
        "locale",
        "bytes",
        "decbytes",
        "bits",
        "decbits",
        "dateTimeAsIso",
        "dateTimeAsIsoNoDateIfToday",
        "dateTimeAsUS",
        "dateTimeAsUSNoDateIfToday",
        "dateTimeAsLocal",
        "dateTimeAsLocalNoDateIfToday",
        "dateTimeAsSystem",
        "dateTimeFromNow",
        "hertz",
        "ns",
        "µs",
        "ms",
        "s",
        "m",
        "h",
        "d",
        "dtdurationms",
        "dtdurations",
        "dthms",
        "dtdhms",
        "timeticks",
        "clockms",
        "clocks",
        "cps",
        "ops",
        "reqps",
        "rps",
        "wps",
        "iops",
        "cpm",
        "opm",
        "rpm",
        "wpm",
        "bool",
        "bool_yes_no",
        "bool_on_off",
    }
)
# Literal stand-ins for Grafana variables, so promtool can parse the expressions.
VARIABLE_VALUES = {
    "job": "orpycamcp-exporter",
    "cluster": ".*",
    "instance": ".+",
    "backlog": "kyc_dead_letters|outbox",
    "__rate_interval": "1m",
    "__interval": "1m",
    "__range": "1h",
    "__range_s": "3600",
    "__range_ms": "3600000",
    "__interval_ms": "60000",
}
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$", re.DOTALL)
OR_VECTOR = re.compile(r"\bor\s+vector\s*\(")
SUM = re.compile(r"\bsum(?:_over_time)?\b")


def dashboard() -> dict[str, Any]:
    document = json.loads(DASHBOARD_PATH.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def panels() -> list[dict[str, Any]]:
    """Every panel with queries: rows are only headings (a collapsed row holds its panels)."""
    found: list[dict[str, Any]] = []
    for panel in dashboard()["panels"]:
        if panel["type"] != "row":
            found.append(panel)
        found.extend(panel.get("panels", []))
    return found


def row_panels(row: dict[str, Any]) -> list[dict[str, Any]]:
    """An expanded row holds the panels below it up to the next row."""
    top: list[dict[str, Any]] = dashboard()["panels"]
    start = top.index(row) + 1
    end = next((i for i in range(start, len(top)) if top[i]["type"] == "row"), len(top))
    return top[start:end]


def test_a_row_per_backlog_shows_its_items_per_state_and_arrivals() -> None:
    rows = [panel for panel in dashboard()["panels"] if panel["type"] == "row"]
    repeated = [row for row in rows if "repeat" in row]
    assert [row["repeat"] for row in repeated] == ["backlog"]
    row = repeated[0]
    below = row_panels(row)
    assert below
    assert all(panel["gridPos"]["y"] > row["gridPos"]["y"] for panel in below)
    shown = {name for panel in below for target in panel["targets"] for name in metric_names(str(target["expr"]))}
    assert shown == {ITEMS, ARRIVALS, ARRIVALS_THRESHOLD}
    for panel in below:
        for target in panel["targets"]:
            assert all(s.has("backlog", "=~", "$backlog") for s in selectors(str(target["expr"]))), target["expr"]


def templates() -> list[dict[str, Any]]:
    return list(dashboard()["templating"]["list"])


def template(name: str) -> dict[str, Any]:
    for variable in templates():
        if variable["name"] == name:
            return variable
    pytest.fail(f"dashboard has no {name!r} variable")


def targets() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for panel in panels():
        for target in panel.get("targets", []):
            yield panel, target


def panel_exprs() -> list[str]:
    return [str(target["expr"]) for _, target in targets()]


def variable_query(variable: dict[str, Any]) -> str:
    query = variable.get("query")
    if isinstance(query, dict):
        query = query.get("query")
    return str(query)


def variable_selector_exprs() -> list[str]:
    """The series selector inside each label_values(...) variable query."""
    exprs: list[str] = []
    for variable in templates():
        if variable["type"] != "query":
            continue
        match = LABEL_VALUES.match(variable_query(variable).strip())
        assert match, f"variable {variable['name']} is not a label_values() query"
        exprs.append(match.group(1))
    return exprs


def all_dashboard_exprs() -> list[str]:
    return panel_exprs() + variable_selector_exprs()


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES_PATH.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def substitute(expr: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in VARIABLE_VALUES:
            pytest.fail(f"unknown dashboard variable ${name} in {expr!r}")
        return VARIABLE_VALUES[name]

    return VARIABLE.sub(replace, expr)


PANEL_IDS = [f"{panel['id']}:{panel['title']}" for panel in panels()]


def panel_by_id(panel_id: str) -> dict[str, Any]:
    return panels()[PANEL_IDS.index(panel_id)]


# --- dashboard identity --------------------------------------------------------


def test_dashboard_identity() -> None:
    document = dashboard()
    assert document["uid"] == "orpycamcp-overview"
    assert document["editable"] is False
    assert 36 <= document["schemaVersion"] <= 41
    assert document["title"]
    assert document.get("id") is None


def test_panel_ids_unique_and_layout_fits() -> None:
    everything = dashboard()["panels"]
    ids = [panel["id"] for panel in everything]
    assert len(ids) == len(set(ids))
    for panel in everything:
        grid = panel["gridPos"]
        assert grid["x"] >= 0, panel["title"]
        assert grid["w"] > 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        assert grid["h"] > 0


def test_layout_is_in_reading_order_without_overlaps() -> None:
    """Grafana gives a row the panels that follow it in the list: list order is reading order."""
    everything = dashboard()["panels"]
    positions = [(panel["gridPos"]["y"], panel["gridPos"]["x"]) for panel in everything]
    assert positions == sorted(positions)
    cells: dict[tuple[int, int], str] = {}
    for panel in everything:
        grid = panel["gridPos"]
        for y in range(grid["y"], grid["y"] + grid["h"]):
            for x in range(grid["x"], grid["x"] + grid["w"]):
                assert (x, y) not in cells, (panel["title"], cells.get((x, y)))
                cells[(x, y)] = panel["title"]
    for row in (panel for panel in everything if panel["type"] == "row"):
        assert row["gridPos"] == {"x": 0, "y": row["gridPos"]["y"], "w": 24, "h": 1}
        assert row_panels(row), f"row {row['title']!r} holds no panel"


# --- dashboard-linter rules ----------------------------------------------------


def test_template_datasource_rule() -> None:
    datasources = [v for v in templates() if v["type"] == "datasource"]
    assert len(datasources) == 1
    variable = datasources[0]
    assert variable["name"] == "datasource"
    assert variable["label"] == "Data source"
    assert variable["query"] == "prometheus"


@pytest.mark.parametrize(("name", "label"), [("job", "Job"), ("instance", "Instance")])
def test_template_job_and_instance_rules(name: str, label: str) -> None:
    variable = template(name)
    assert variable["type"] == "query"
    assert variable["datasource"]["uid"] in TEMPLATED_DATASOURCES
    assert variable["label"] == label
    assert variable["multi"] is True
    assert variable["includeAll"] is True
    assert variable["allValue"] == ".+"
    match = LABEL_VALUES.match(variable_query(variable).strip())
    assert match
    assert match.group(2) == name


@pytest.mark.parametrize("panel_id", PANEL_IDS)
def test_panel_datasource_rule(panel_id: str) -> None:
    panel = panel_by_id(panel_id)
    assert panel["datasource"]["uid"] in TEMPLATED_DATASOURCES
    assert panel["datasource"]["type"] == "prometheus"
    for target in panel["targets"]:
        assert target.get("datasource", panel["datasource"])["uid"] in TEMPLATED_DATASOURCES


@pytest.mark.parametrize("panel_id", PANEL_IDS)
def test_panel_type_and_targets(panel_id: str) -> None:
    panel = panel_by_id(panel_id)
    assert panel["type"] in PANEL_TYPES
    assert panel["targets"], "panel-no-targets"
    ref_ids = [target["refId"] for target in panel["targets"]]
    assert len(ref_ids) == len(set(ref_ids))


def test_cluster_variable() -> None:
    """Multi-select with All; All is `.*` so that series without the cluster label (one cluster) match."""
    variable = template("cluster")
    assert variable["type"] == "query"
    assert variable["datasource"]["uid"] in TEMPLATED_DATASOURCES
    assert variable["label"] == "Cluster"
    assert variable["multi"] is True
    assert variable["includeAll"] is True
    assert variable["allValue"] == ".*"
    match = LABEL_VALUES.match(variable_query(variable).strip())
    assert match
    assert match.group(2) == cluster_label()
    names = [v["name"] for v in templates()]
    assert names.index("job") < names.index("cluster") < names.index("instance")


@functools.cache
def default_config() -> dict[str, Any]:
    """The mixin's `_config`, which the checked-in dashboard is rendered with."""
    tool("jsonnet")
    return mixin.default_config()


def cluster_label() -> str:
    """The target label that names a cluster (`clusterLabel`); the variable is `$cluster` whatever it is."""
    return str(default_config()["clusterLabel"])


def deployment_matchers() -> set[Matcher]:
    """The matchers of the mixin's `orpycamcpSelector`."""
    (selector,) = selectors("{" + str(default_config()["orpycamcpSelector"]) + "}")
    return set(selector.matchers)


def test_every_query_and_variable_reads_only_this_deployment() -> None:
    """ "All" is `.+` / `.*`, which matches any job: every selector also carries the deployment's own
    matchers, so no panel or variable shows another job's series (`up{job="prometheus"}`)."""
    deployment = deployment_matchers()
    assert deployment
    exprs = all_dashboard_exprs()
    assert len(exprs) > len(panels())
    for expr in exprs:
        for selector in selectors(expr):
            assert deployment <= set(selector.matchers), expr


def is_platform_record(metric: str | None) -> bool:
    return metric is not None and PLATFORM_RECORD.match(metric) is not None


@pytest.mark.parametrize("variable", ["job", "cluster", "instance"])
def test_target_job_and_instance_rules(variable: str) -> None:
    """target-job-rule / target-instance-rule: every selector filters with label=~"$variable".

    A platform total spans every cluster and replica: it is filtered by job only.
    """
    label = cluster_label() if variable == "cluster" else variable
    for panel, target in targets():
        for selector in selectors(str(target["expr"])):
            if is_platform_record(selector.metric):
                assert selector.has("job", "=~", "$job"), (panel["title"], target["expr"])
                assert label == "job" or not any(m.label == label for m in selector.matchers), target["expr"]
                continue
            assert selector.has(label, "=~", f"${variable}"), (panel["title"], target["expr"])
    # The cluster and instance variables are themselves filtered by the selected jobs.
    for expr in variable_selector_exprs()[1:]:
        assert all(s.has("job", "=~", "$job") for s in selectors(expr)), expr


def test_per_cluster_panels_keep_the_cluster() -> None:
    """Raw series are aggregated per cluster and say which cluster in the legend."""
    for panel, target in targets():
        expr = str(target["expr"])
        if any(is_platform_record(s.metric) for s in selectors(expr)):
            continue
        for group in re.findall(r"\bby\s*\(([^)]*)\)", expr):
            assert cluster_label() in {g.strip() for g in group.split(",")}, (panel["title"], expr)
        legend = str(target.get("legendFormat", ""))
        if legend != "__auto":
            assert "{{" + cluster_label() + "}}" in legend, (panel["title"], legend)


def test_platform_totals_beside_per_cluster_series() -> None:
    """The totals of the per-cluster signals are shown, and their absence reads "unknown"."""
    shown: set[str] = set()
    for panel, target in targets():
        records = {s.metric for s in selectors(str(target["expr"])) if is_platform_record(s.metric)}
        if not records:
            continue
        shown |= {str(metric) for metric in records}
        assert "unknown" in str(panel["fieldConfig"]["defaults"].get("noValue", "unknown")), panel["title"]
        if panel["type"] == "stat":
            assert mapping_texts(panel).get("null") == "unknown", panel["title"]
        assert "unknown" in panel["description"], panel["title"]
    assert {
        "orpycamcp:dlq_pending_events:total",
        "orpycamcp:dlq_oldest_pending_timestamp_seconds:total",
        "orpycamcp:preservation_exhausted_artifacts:total",
        "orpycamcp:signal_measured_clusters:count",
        "orpycamcp:clusters:count",
    } <= shown
    # The per-cluster series of the same families stay on the dashboard.
    raw = dashboard_metric_names()
    assert {"orpycamcp_dlq_pending_events", "orpycamcp_preservation_exhausted_artifacts"} <= raw


@pytest.mark.parametrize("panel_id", PANEL_IDS)
def test_panel_units_rule(panel_id: str) -> None:
    unit = panel_by_id(panel_id)["fieldConfig"]["defaults"].get("unit", "")
    assert unit in VALID_UNITS, f"invalid or missing unit {unit!r}"


@pytest.mark.parametrize("panel_id", PANEL_IDS)
def test_panel_title_description_rule(panel_id: str) -> None:
    panel = panel_by_id(panel_id)
    assert panel["title"].strip()
    assert len(panel["description"].strip()) > 20


def test_no_or_vector_zero_anywhere() -> None:
    assert not OR_VECTOR.search(DASHBOARD_PATH.read_text(encoding="utf-8"))
    assert not OR_VECTOR.search(RULES_PATH.read_text(encoding="utf-8"))
    assert not any("vector(" in expr for expr in panel_exprs())


def test_no_sum_over_replicas() -> None:
    for expr in panel_exprs():
        assert not SUM.search(expr), expr


def test_no_rate_without_rate_interval() -> None:
    """target-rate-interval-rule (gauges only: no rate() at all is expected)."""
    for expr in panel_exprs():
        for match in re.finditer(r"\b(?:rate|irate|increase)\s*\([^\[]*\[([^\]]+)\]", expr):
            assert match.group(1) == "$__rate_interval", expr


# --- "unknown" is shown distinctly from 0 -----------------------------------------


def mapping_texts(panel: dict[str, Any]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for mapping in panel["fieldConfig"]["defaults"].get("mappings", []):
        if mapping["type"] == "value":
            for value, result in mapping["options"].items():
                texts[str(value)] = str(result["text"])
        elif mapping["type"] == "special":
            texts[str(mapping["options"]["match"])] = str(mapping["options"]["result"]["text"])
    return texts


def test_signal_health_panels_show_unknown_distinctly() -> None:
    health = [
        p
        for p in panels()
        if any("orpycamcp_signal_measured" in str(t["expr"]) and "NaN" not in str(t["expr"]) for t in p["targets"])
    ]
    assert {p["type"] for p in health} >= {"stat", "state-timeline"}
    for panel in health:
        texts = mapping_texts(panel)
        assert texts.get("0"), panel["title"]
        assert texts.get("1"), panel["title"]
        assert texts["0"] != texts["1"], panel["title"]
        assert texts["0"].lower() != "unknown"
        if panel["type"] == "stat":
            assert texts.get("null") == "unknown"
            assert panel["fieldConfig"]["defaults"].get("noValue"), panel["title"]


def test_never_markers_are_mapped() -> None:
    """Series padded with NaN ("reported but never measured") display as text, not a number."""
    padded = [p for p in panels() if any("NaN" in str(t["expr"]) for t in p["targets"])]
    assert len(padded) >= 3
    for panel in padded:
        assert "nan" in mapping_texts(panel), panel["title"]
        for target in panel["targets"]:
            assert re.search(r"\bor\b.*\*\s*NaN\s*$", str(target["expr"])), target["expr"]


def test_stat_panels_say_what_no_value_means() -> None:
    for panel in panels():
        if panel["type"] == "stat":
            assert panel["fieldConfig"]["defaults"].get("noValue"), panel["title"]


# --- promtool parses every expression ----------------------------------------------


def test_every_expression_parses_with_promtool(tmp_path: Path) -> None:
    records = []
    for number, expr in enumerate(all_dashboard_exprs()):
        records.append({"record": f"dashboard:expr_{number}:check", "expr": substitute(expr)})
    assert len(records) >= len(panels())
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": records}]}))
    result = subprocess.run(
        [tool("promtool"), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(records)} rules found" in result.stdout


def test_promtool_rejects_a_broken_expression(tmp_path: Path) -> None:
    """The check above would notice a broken panel expression."""
    path = tmp_path / "broken.rules.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "groups": [
                    {
                        "name": "g",
                        "rules": [{"record": "broken:check", "expr": substitute('max by (job) (up{job=~"$job"}')}],
                    }
                ]
            }
        )
    )
    result = subprocess.run(
        [tool("promtool"), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0


# --- metric names against the registry ---------------------------------------------

REGISTRY_NAMES = frozenset(family.name for family in FAMILIES) | BACKLOG_FAMILIES


def recorded_names() -> set[str]:
    return {str(rule["record"]) for rule in rules() if "record" in rule}


def rule_metric_names() -> set[str]:
    names: set[str] = set()
    for rule in rules():
        names |= metric_names(str(rule["expr"]))
    return names


def dashboard_metric_names() -> set[str]:
    names: set[str] = set()
    for expr in all_dashboard_exprs():
        names |= metric_names(expr)
    return names


def test_every_metric_used_exists() -> None:
    defined = REGISTRY_NAMES | recorded_names() | PROMETHEUS_SERIES | BACKLOG_FAMILIES
    unknown = (rule_metric_names() | dashboard_metric_names()) - defined
    assert not unknown, f"metrics not in the registry nor recorded: {sorted(unknown)}"


def test_dashboard_uses_raw_series_or_platform_totals() -> None:
    """Recording rules drop `instance`, which the dashboard filters on; only the
    platform totals (over every cluster and replica) are read from the rules."""
    records = {name for name in dashboard_metric_names() if ":" in name}
    assert all(PLATFORM_RECORD.match(name) for name in records), records
    assert records <= recorded_names()
    assert dashboard_metric_names() - records <= REGISTRY_NAMES | PROMETHEUS_SERIES


def test_recording_rules_are_used() -> None:
    """By an alert, by another rule or by the dashboard (platform totals may stand alone)."""
    used: set[str] = set(dashboard_metric_names())
    for rule in rules():
        used |= metric_names(str(rule["expr"]))
    unused = recorded_names() - used
    # Platform totals are also a product of their own, for queries and federation.
    assert all(name.endswith(":total") for name in unused), unused


def test_every_registry_family_is_used() -> None:
    used = rule_metric_names() | dashboard_metric_names()
    assert not REGISTRY_NAMES - used, sorted(REGISTRY_NAMES - used)


def test_every_registry_family_is_on_the_dashboard() -> None:
    missing = REGISTRY_NAMES - dashboard_metric_names()
    assert not missing, sorted(missing)


def test_label_names_exist_in_registry() -> None:
    """Labels named in dashboard matchers and legends are registry or target labels."""
    known = {"job", cluster_label(), "instance", "backlog", "group", "state", "window"} | {
        label for family in FAMILIES for label in family.labels
    }
    for panel, target in targets():
        for selector in selectors(str(target["expr"])):
            assert {m.label for m in selector.matchers} <= known, panel["title"]
        for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", str(target.get("legendFormat", ""))):
            assert label in known, (panel["title"], label)
        for group in re.findall(r"\bby\s*\(([^)]*)\)", str(target["expr"])):
            assert {g.strip() for g in group.split(",")} <= known, (panel["title"], group)


# --- provisioning --------------------------------------------------------------------


def test_dashboard_provisioning() -> None:
    document = yaml.safe_load(DASHBOARD_PROVISIONING.read_text(encoding="utf-8"))
    assert document["apiVersion"] == 1
    (provider,) = document["providers"]
    assert provider["type"] == "file"
    assert provider["allowUiUpdates"] is False
    assert Path(provider["options"]["path"]).is_absolute()


def test_datasource_provisioning() -> None:
    document = yaml.safe_load(DATASOURCE_PROVISIONING.read_text(encoding="utf-8"))
    assert document["apiVersion"] == 1
    (datasource,) = document["datasources"]
    assert datasource["type"] == "prometheus"
    # The dashboard's datasource variable defaults to the default Prometheus.
    assert datasource["isDefault"] is True
    assert str(datasource["url"]).startswith("http")


# --- the selector reader itself --------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('max by (signal) (a{job=~"$job"})', [Selector("a", ())]),
        ("time() - max without (instance) (b) > 1800", [Selector("b", ())]),
        ("x > x offset 15m", [Selector("x", ()), Selector("x", ())]),
        ('a unless ignoring (signal) b{signal="s"} * NaN', [Selector("a", ()), Selector("b", ())]),
        ("rate(c[5m]) or on (job) d", [Selector("c", ()), Selector("d", ())]),
    ],
)
def test_selector_reader(expr: str, expected: list[Selector]) -> None:
    assert [s.metric for s in selectors(expr)] == [s.metric for s in expected]


def test_selector_reader_reads_matchers() -> None:
    (selector,) = selectors('m{job=~"$job", instance=~"$instance", s!="a,b}"}')
    assert selector.has("job", "=~", "$job")
    assert selector.has("instance", "=~", "$instance")
    assert selector.has("s", "!=", "a,b}")
    assert metric_names('max by (origin_group) (orpycamcp_dlq_pending_events{job=~"$job"})') == {
        "orpycamcp_dlq_pending_events"
    }
    with pytest.raises(PromQLSyntaxError):
        metric_names('{__name__="x"}')


def test_backlog_row_follows_the_backlog_variable_and_shows_unknown() -> None:
    variable = template("backlog")
    assert variable["type"] == "query"
    assert variable["multi"] is True
    assert variable["includeAll"] is True
    assert "allValue" not in variable, "All means every declared backlog, never every signal"
    match = LABEL_VALUES.match(variable_query(variable).strip())
    assert match
    assert match.group(2) == "backlog"
    backlog_panels = [p for p in panels() if any("$backlog" in str(t["expr"]) for t in p["targets"])]
    assert len(backlog_panels) == 6
    assert dashboard_metric_names() >= {PENDING_ITEMS, OLDEST_PENDING}
    for panel in backlog_panels:
        for target in panel["targets"]:
            label = "signal" if "orpycamcp_signal_measured" in str(target["expr"]) else "backlog"
            assert all(s.has(label, "=~", "$backlog") for s in selectors(str(target["expr"]))), panel["title"]
        if panel["type"] == "stat":
            assert mapping_texts(panel).get("null") == "unknown", panel["title"]
            assert panel["fieldConfig"]["defaults"]["noValue"] == "unknown", panel["title"]
        else:
            assert "unknown, not zero" in panel["description"] or "unmeasured" in panel["description"]
