"""Renders the monitoring mixin (mixin/) into the plain files users load without jsonnet.

    python -m devkit.mixin    # rewrite alerts/orpycamcp.rules.yml, alerts/alertmanager.example.yml,
                              # grafana/dashboards/*.json and deploy/kubernetes/rules/prometheusrule.yaml

The checked-in files are this rendering of the default `_config`; the test suite
renders again and fails on any difference. `render(config)` renders another
`_config` (a renamed job, another cluster label) for the tests of those setups.
Needs the `jsonnet` command (Debian's `jsonnet` package); no network.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _gojsonnet  # type: ignore[import-not-found]
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
# Another copy of mixin/ to render (devkit/mixin_mutation.py runs the render checks on its mutants).
MIXIN_DIR_VARIABLE = "ORPYCAMCP_MIXIN_DIR"
MIXIN_DIR = Path(os.environ.get(MIXIN_DIR_VARIABLE) or REPO_ROOT / "mixin")
RULES_PATH = REPO_ROOT / "alerts" / "orpycamcp.rules.yml"
ALERTMANAGER_PATH = REPO_ROOT / "alerts" / "alertmanager.example.yml"
DASHBOARDS_DIR = REPO_ROOT / "grafana" / "dashboards"
PROMETHEUS_RULE_PATH = REPO_ROOT / "deploy" / "kubernetes" / "rules" / "prometheusrule.yaml"

RULES_HEADER = """\
# Prometheus recording and alerting rules for orpycamcp-exporter.
#
# Rendered from the monitoring mixin (mixin/, default `_config`) by
# `python -m devkit.mixin`: do not edit by hand. To change a threshold, the job
# selector or the cluster label, override `_config` in the mixin (see
# docs/alerts-and-dashboard.md), or edit mixin/config.libsonnet and render again.
#
# Replicas of one exporter deployment report the same database state: every
# value is merged `max by (job, <cluster label>, <the family's labels>)`, so
# instance, pod, namespace or any other target label never splits a cluster.
# Platform totals over clusters (`:total`) are present only when complete.
"""
ALERTMANAGER_HEADER = """\
# Example Alertmanager configuration for the orpycamcp-exporter alerts
# (alerts/orpycamcp.rules.yml). Rendered from the monitoring mixin (mixin/,
# alertmanager.libsonnet, default `_config`) by `python -m devkit.mixin`: do not
# edit by hand; render it with your own `_config` (selector, cluster label) so
# that its routes and inhibitions match your rules. Receivers are placeholder
# webhooks on 127.0.0.1: replace them with your own (PagerDuty, e-mail, chat, ...).
#
# Inhibitions stay inside one deployment (the selector's labels) and one
# cluster: OrpycamcpSignalUnmeasured holds the value alerts of its own database
# and signal; OrpycamcpExporterDown those of its own cluster;
# OrpycamcpDatabaseVanished (its targets gone) the value alerts of its database,
# held by keep_firing_for, so their end is never sent as "resolved" meanwhile;
# OrpycamcpExporterAbsent (no target at all) those of the deployment.
# OrpycamcpPlatformTotalUnknown and the database alerts are never inhibited.
#
# Check it with:  amtool check-config alerts/alertmanager.example.yml
"""
PROMETHEUS_RULE_HEADER = """\
# The rules of alerts/orpycamcp.rules.yml as a Prometheus Operator PrometheusRule.
# Rendered from the monitoring mixin (mixin/) by `python -m devkit.mixin`: do not
# edit by hand.
"""
LABELS = {"app.kubernetes.io/name": "orpycamcp-exporter", "app.kubernetes.io/component": "exporter"}
# Rule keys in the order a reader expects them, not jsonnet's alphabetical one.
RULE_KEYS = ("record", "alert", "expr", "for", "keep_firing_for", "labels", "annotations")
LABEL_KEYS = ("severity", "signal", "orpycamcp_role")
ANNOTATION_KEYS = ("summary", "description", "runbook_url")


class MixinError(Exception):
    """jsonnet is missing or could not evaluate the mixin."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"cannot render the mixin: {detail}")


@dataclass(frozen=True)
class Rendering:
    """The mixin's outputs for one `_config`."""

    rules: dict[str, Any]
    alerts: dict[str, Any]
    dashboards: dict[str, Any]
    alertmanager: dict[str, Any]


def _jsonnet(program: str, config: Mapping[str, Any] | None = None, directory: Path = MIXIN_DIR) -> Any:
    """The JSON value of one jsonnet program evaluated in mixin/, `config` as the
    external variable `config`. go-jsonnet (the gojsonnet package) gives what
    Debian's jsonnet command gives, in a fifth of its CPU time: the mixin's
    rules and alerts take seconds there, minutes on a loaded machine."""
    try:
        text = _gojsonnet.evaluate_snippet(
            "mixin", program, jpathdir=[str(directory)], ext_codes={"config": json.dumps(dict(config or {}))}
        )
    except RuntimeError as error:
        # jsonnet's first line says what is wrong; the rest is its stack trace.
        lines = str(error).strip().splitlines()
        raise MixinError(lines[0].removeprefix("RUNTIME ERROR: ") if lines else "jsonnet failed") from None
    return json.loads(text)


def evaluate(config: Mapping[str, Any] | None = None) -> Rendering:
    """Evaluates mixin/mixin.libsonnet with `config` merged over its `_config`.

    One evaluation costs seconds of CPU (many on a loaded machine), and the
    tests ask for the same few configurations again and again: each is
    evaluated once per process and per state of mixin/, and handed out as a copy.
    """
    key = (json.dumps(dict(config or {}), sort_keys=True), _sources_state())
    if key not in _EVALUATED:
        _EVALUATED[key] = _evaluate(config)
    return copy.deepcopy(_EVALUATED[key])


_EVALUATED: dict[tuple[str, tuple[tuple[str, int, int], ...]], Rendering] = {}


def _sources_state() -> tuple[tuple[str, int, int], ...]:
    """What mixin/ holds now, by name, size and modification time of each file."""
    return tuple(
        (str(path.relative_to(MIXIN_DIR)), stat.st_size, stat.st_mtime_ns)
        for path in sorted(MIXIN_DIR.rglob("*"))
        if path.is_file() and (stat := path.stat())
    )


def _program(outputs: str) -> str:
    """The jsonnet program giving the mixin's `outputs` ("name: $.field, ...") for the external `config`."""
    return '((import "mixin.libsonnet") + { _config+:: std.extVar("config") } + { out: { ' + outputs + " } }).out"


RULE_OUTPUTS = "rules: $.prometheusRules, alerts: $.prometheusAlerts"


def _evaluate(config: Mapping[str, Any] | None) -> Rendering:
    document = _jsonnet(
        _program(f"{RULE_OUTPUTS}, dashboards: $.grafanaDashboards, alertmanager: $.alertmanagerConfig"), config
    )
    return Rendering(document["rules"], document["alerts"], document["dashboards"], document["alertmanager"])


def evaluate_rules(config: Mapping[str, Any] | None, directory: Path) -> Rendering:
    """Only the rules and alerts (no dashboard, no Alertmanager configuration), of the mixin
    in `directory` and not cached: devkit/mixin_mutation.py's mutants of mixin/."""
    document = _jsonnet(_program(RULE_OUTPUTS), config, directory)
    return Rendering(document["rules"], document["alerts"], {}, {})


def evaluate_alertmanager(config: Mapping[str, Any] | None, directory: Path) -> dict[str, Any]:
    """Only the Alertmanager configuration, of the mixin in `directory` and not cached."""
    configuration: dict[str, Any] = _jsonnet(_program("alertmanager: $.alertmanagerConfig"), config, directory)[
        "alertmanager"
    ]
    return configuration


def default_config() -> dict[str, Any]:
    """The mixin's `_config` with its defaults."""
    config: dict[str, Any] = _jsonnet('(import "mixin.libsonnet")._config')
    return config


def _ordered(mapping: Mapping[str, Any], first: tuple[str, ...]) -> dict[str, Any]:
    keys = [key for key in first if key in mapping] + sorted(set(mapping) - set(first))
    return {key: mapping[key] for key in keys}


def _rule(rule: Mapping[str, Any]) -> dict[str, Any]:
    ordered = _ordered(rule, RULE_KEYS)
    if "labels" in ordered:
        ordered["labels"] = _ordered(ordered["labels"], LABEL_KEYS)
    if "annotations" in ordered:
        ordered["annotations"] = _ordered(ordered["annotations"], ANNOTATION_KEYS)
    return ordered


class _RulesDumper(yaml.SafeDumper):
    """Multi-line strings (expressions) as literal blocks, the rest plain; lists indented."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_RulesDumper.add_representer(str, _represent_str)


def rule_groups(rendering: Rendering) -> list[dict[str, Any]]:
    """The recording groups, then the alerting groups."""
    return [
        {"name": group["name"], "rules": [_rule(rule) for rule in group["rules"]]}
        for group in (*rendering.rules["groups"], *rendering.alerts["groups"])
    ]


def rule_name(rule: Mapping[str, Any]) -> str:
    """A rule's alert or record name (a record's several rules share it)."""
    return str(rule.get("alert") or rule["record"])


def naming(names: Iterable[str]) -> re.Pattern[str]:
    """Any of `names` as a whole name in PromQL: not a part of a longer metric or record
    name (`a:b` is not named by `a:b_c`), an alert's in `ALERTS{alertname="..."}` too."""
    return re.compile(r"(?<![\w:])(?:" + "|".join(re.escape(name) for name in sorted(names)) + r")(?![\w:])")


def reads(rendering: Rendering) -> dict[str, set[str]]:
    """Each rule's name, with the names of the other rules its expression reads: a
    record, or an alert through `ALERTS`."""
    rules = [(rule_name(rule), _code(str(rule["expr"]))) for group in rule_groups(rendering) for rule in group["rules"]]
    named = naming(name for name, _ in rules)
    read: dict[str, set[str]] = {}
    for name, expr in rules:
        read.setdefault(name, set()).update(set(named.findall(expr)) - {name})
    return read


# A PromQL string (quoted, with its escapes), or a comment: `#` outside a string, to the line's end.
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`[^`]*`|#[^\n]*')


def _code(expr: str) -> str:
    """`expr` without its comments (which name rules they do not read)."""
    return _STRING_OR_COMMENT.sub(lambda match: "" if match.group().startswith("#") else match.group(), expr)


def reached(names: Iterable[str], edges: Mapping[str, Iterable[str]]) -> set[str]:
    """`names` and every name reached from them along `edges`, transitively."""
    found = set(names)
    frontier = list(found)
    while frontier:
        step = set(edges.get(frontier.pop(), ())) - found
        found |= step
        frontier += step
    return found


def readers(read: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """`reads` turned around: each name, with the rules reading it."""
    turned: dict[str, set[str]] = {}
    for reader, names in read.items():
        for name in names:
            turned.setdefault(name, set()).add(reader)
    return turned


def _yaml(document: Mapping[str, Any]) -> str:
    return yaml.dump(document, Dumper=_RulesDumper, sort_keys=False, allow_unicode=True, width=float("inf"), indent=2)


def rules_yaml(rendering: Rendering) -> str:
    """One Prometheus rule file."""
    return RULES_HEADER + "\n" + _yaml({"groups": rule_groups(rendering)})


def prometheus_rule_yaml(rendering: Rendering) -> str:
    """The same groups as the spec of a PrometheusRule."""
    document = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "orpycamcp-exporter", "labels": dict(LABELS)},
        "spec": {"groups": rule_groups(rendering)},
    }
    return PROMETHEUS_RULE_HEADER + _yaml(document)


def alertmanager_yaml(rendering: Rendering) -> str:
    """The example Alertmanager configuration, keys in the order of Alertmanager's documentation."""
    config = rendering.alertmanager
    ordered = {key: config[key] for key in ("global", "route", "inhibit_rules", "receivers")}
    route = _ordered(ordered["route"], ("receiver", "group_by", "group_wait", "group_interval", "repeat_interval"))
    route["routes"] = [_ordered(r, ("matchers", "receiver")) for r in route["routes"]]
    for child in route["routes"]:
        if "routes" in child:
            child["routes"] = [_ordered(r, ("matchers", "receiver")) for r in child["routes"]]
    ordered["route"] = route
    ordered["inhibit_rules"] = [
        _ordered(rule, ("source_matchers", "target_matchers", "equal")) for rule in ordered["inhibit_rules"]
    ]
    ordered["receivers"] = [_ordered(r, ("name",)) for r in ordered["receivers"]]
    return ALERTMANAGER_HEADER + "\n" + _yaml(ordered)


def dashboard_json(dashboard: Mapping[str, Any]) -> str:
    return json.dumps(dashboard, indent=2, ensure_ascii=False) + "\n"


def render(config: Mapping[str, Any] | None = None) -> dict[Path, str]:
    """Every file of the plain rendering, by its path relative to the repository."""
    rendering = evaluate(config)
    files = {
        RULES_PATH.relative_to(REPO_ROOT): rules_yaml(rendering),
        ALERTMANAGER_PATH.relative_to(REPO_ROOT): alertmanager_yaml(rendering),
        PROMETHEUS_RULE_PATH.relative_to(REPO_ROOT): prometheus_rule_yaml(rendering),
    }
    for name, dashboard in rendering.dashboards.items():
        files[(DASHBOARDS_DIR / name).relative_to(REPO_ROOT)] = dashboard_json(dashboard)
    return files


def main() -> int:
    try:
        files = render()
    except MixinError as error:
        print(error, file=sys.stderr)
        return 1
    for path, text in files.items():
        (REPO_ROOT / path).write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
