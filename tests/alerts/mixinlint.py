"""`mixtool lint` in Python, for the rendered mixin: mixtool's alert guidelines
(monitoring-mixins/mixtool, pkg/mixer/lint.go) and grafana/dashboard-linter's
rules (lint/rules.go, NewRuleSet), with their names, both read with exclusions
from `mixin/.lint` as they read it (dashboard-linter lint/configuration.go:
an exclusion without entries excludes the whole rule; an entry matches an alert
by name, or a result by dashboard title, panel title and target index).

Neither Go tool runs here (no Go toolchain, no network): these are their rules
re-stated, each with the message of the original. Where a rule is stricter
here it says so. `reason` is free text to those tools; here every exclusion and
every entry must have one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.grafana.promql import Selector, selectors

# mixtool: lintPrometheusAlertsGuidelines
CAMEL_CASE = re.compile(r"^([A-Z]+[a-z0-9]+)+$")
GO_TEMPLATE = re.compile(r"\{\{.+}\}")
SENTENCE = re.compile(r"^[A-Z].+\.$")
SEVERITIES = ("warning", "critical", "info")
# Alertmanager and PagerDuty cut long alert names in their listings; the
# monitoring mixins keep names short. mixtool itself has no length rule: this one is ours.
MAX_ALERT_NAME = 40
# dashboard-linter: panelHasQueries, the units rule's panel types, checkTemplate's datasources.
QUERY_PANELS = frozenset({"singlestat", "graph", "table", "stat", "state-timeline", "timeseries"})
UNIT_PANELS = frozenset({"stat", "singlestat", "graph", "table", "timeseries", "gauge"})
TEMPLATE_DATASOURCES = frozenset({"$datasource", "${datasource}", "$prometheus_datasource", "${prometheus_datasource}"})
RATE_RANGE = re.compile(r"\b(rate|irate|increase)\s*\(([^()\[]*)\[([^\]]+)\]")
COUNTER = re.compile(r"_total$")


@dataclass(frozen=True)
class Problem:
    """One rule's finding: what dashboard-linter calls a ResultContext (alert for mixtool's rules)."""

    rule: str
    message: str
    alert: str | None = None
    dashboard: str | None = None
    panel: str | None = None
    target: int | None = None
    warning: bool = False


@dataclass(frozen=True)
class Entry:
    reason: str
    alert: str | None = None
    dashboard: str | None = None
    panel: str | None = None
    target: int | None = None

    def matches(self, problem: Problem) -> bool:
        """dashboard-linter's ConfigurationEntry.IsMatch, and mixtool's match by alert name."""
        if problem.alert is not None:
            return self.alert == problem.alert
        if problem.dashboard is not None and self.dashboard != problem.dashboard:
            return False
        if problem.panel is not None and self.panel != problem.panel:
            return False
        return problem.target is None or self.target is None or self.target == problem.target


@dataclass(frozen=True)
class Exclusion:
    rule: str
    reason: str
    entries: tuple[Entry, ...]

    def excludes(self, problem: Problem) -> bool:
        return problem.rule == self.rule and (not self.entries or any(e.matches(problem) for e in self.entries))


class LintFileError(ValueError):
    """A `.lint` file that is not what the tools read, or an exclusion without its reason."""


def _text(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise LintFileError(f"{key} must be text, not {value!r}")
    return value


def load_lint_file(path: Path) -> tuple[Exclusion, ...]:
    """The exclusions of a `.lint` file; LintFileError for an unknown key or a missing reason."""
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if set(document) - {"exclusions", "warnings"}:
        raise LintFileError(f"unknown keys {sorted(set(document) - {'exclusions', 'warnings'})}")
    found: list[Exclusion] = []
    for rule, body in (document.get("exclusions") or {}).items():
        body = body or {}
        if set(body) - {"reason", "entries"}:
            raise LintFileError(f"{rule}: unknown keys {sorted(set(body) - {'reason', 'entries'})}")
        reason = (_text(body, "reason") or "").strip()
        if not reason:
            raise LintFileError(f"{rule}: an exclusion states its reason")
        entries: list[Entry] = []
        for raw in body.get("entries") or []:
            unknown = set(raw) - {"reason", "alert", "dashboard", "panel", "targetIdx"}
            if unknown:
                raise LintFileError(f"{rule}: unknown entry keys {sorted(unknown)}")
            why = (_text(raw, "reason") or "").strip()
            if not why:
                raise LintFileError(f"{rule}: the entry {raw} states its reason")
            target = raw.get("targetIdx")
            entries.append(
                Entry(
                    why,
                    _text(raw, "alert"),
                    _text(raw, "dashboard"),
                    _text(raw, "panel"),
                    None if target in (None, "") else int(target),
                )
            )
        found.append(Exclusion(str(rule), reason, tuple(entries)))
    return tuple(found)


def remaining(problems: list[Problem], exclusions: tuple[Exclusion, ...]) -> list[Problem]:
    """The problems no exclusion covers (what `mixtool lint` would print and fail on)."""
    return [p for p in problems if not p.warning and not any(e.excludes(p) for e in exclusions)]


# --- mixtool's alert guidelines -------------------------------------------------------


def alert_problems(rule: Mapping[str, Any], runbook_anchors: set[str] | None = None) -> list[Problem]:
    name = str(rule["alert"])
    labels = rule.get("labels") or {}
    annotations = rule.get("annotations") or {}
    found: list[Problem] = []

    def problem(rule_name: str, message: str) -> None:
        found.append(Problem(rule_name, message, alert=name))

    if not CAMEL_CASE.match(name):
        problem("alert-name-camelcase", f"Alert '{name}' name is not in camel case")
    if len(name) > MAX_ALERT_NAME:
        problem("alert-name-length", f"Alert '{name}' name has {len(name)} characters, more than {MAX_ALERT_NAME}")
    if labels.get("severity") not in SEVERITIES:
        problem(
            "alert-severity-rule",
            f"Alert '{name}' severity must be 'warning', 'critical' or 'info',"
            f" is currently '{labels.get('severity', '')}'",
        )
    if "description" not in annotations:
        problem("alert-description-missing-rule", f"Alert '{name}' must have annotation 'description'")
    elif not GO_TEMPLATE.search(str(annotations["description"])):
        problem("alert-description-templating", f"Alert {name} annotation 'description' must use templates")
    if "summary" not in annotations:
        problem("alert-summary-missing-rule", f"Alert '{name}' must have annotation 'summary'")
    else:
        summary = str(annotations["summary"])
        if GO_TEMPLATE.search(summary):
            problem("alert-summary-templating", f"Alert {name} annotation 'summary' must not use templates")
        if not SENTENCE.match(summary):
            problem(
                "alert-summary-style",
                f"Alert {name} annotation 'summary' must start with capital letter and end with period",
            )
    # The monitoring mixins' guideline (mixtool checks it only when generating runbooks): a runbook per alert.
    url = str(annotations.get("runbook_url", ""))
    if not url:
        problem("alert-runbook-url-rule", f"Alert '{name}' must have annotation 'runbook_url'")
    elif runbook_anchors is not None and url.rpartition("#")[2] not in runbook_anchors:
        problem("alert-runbook-url-rule", f"Alert '{name}' runbook_url {url} names no section of the runbook")
    return found


# --- grafana/dashboard-linter ------------------------------------------------------------


def _panels(dashboard: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Dashboard.GetPanels: the panels, those of collapsed rows included, rows themselves too."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def _template(dashboard: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return next((t for t in dashboard.get("templating", {}).get("list", []) if t.get("name") == name), None)


def _datasource_template(dashboard: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((t for t in dashboard.get("templating", {}).get("list", []) if t.get("type") == "datasource"), None)


def _uid(source: Any) -> str:
    return str(source.get("uid", "")) if isinstance(source, dict) else str(source or "")


def _template_rules(dashboard: Mapping[str, Any], title: str) -> list[Problem]:
    found: list[Problem] = []
    sources = [t for t in dashboard.get("templating", {}).get("list", []) if t.get("type") == "datasource"]
    if not sources:
        found.append(Problem("template-datasource-rule", f"Dashboard '{title}' does not have a templated data source"))
    for source in sources:
        kind = str(source.get("query", ""))
        names = {f"{kind.lower()}_datasource"} | ({"datasource"} if len(sources) == 1 else set())
        labels = {f"{kind.title()} data source"} | ({"Data source"} if len(sources) == 1 else set())
        if source.get("name") not in names:
            found.append(Problem("template-datasource-rule", f"variable named '{source.get('name')}'", dashboard=title))
        elif source.get("label") not in labels:
            found.append(
                Problem("template-datasource-rule", f"labeled '{source.get('label')}'", dashboard=title, warning=True)
            )
    datasource = _datasource_template(dashboard)
    if datasource is None or datasource.get("query") != "prometheus":
        return found
    for name in ("job", "instance"):
        rule = f"template-{name}-rule"
        template = _template(dashboard, name)
        if template is None:
            found.append(Problem(rule, f"is missing the {name} template", dashboard=title))
            continue
        if _uid(template.get("datasource")) not in TEMPLATE_DATASOURCES:
            found.append(Problem(rule, f"{name} template should use datasource '$datasource'", dashboard=title))
        if template.get("type") != "query":
            found.append(Problem(rule, f"{name} template should be a Prometheus query", dashboard=title))
        if template.get("label") != name.title():
            found.append(
                Problem(rule, f"{name} template should be labeled '{name.title()}'", dashboard=title, warning=True)
            )
        if not template.get("multi"):
            found.append(Problem(rule, f"{name} template should be a multi select", dashboard=title))
        if template.get("allValue") != ".+":
            found.append(Problem(rule, f"{name} template allValue should be '.+'", dashboard=title))
    for template in dashboard.get("templating", {}).get("list", []):
        if template.get("type") == "query" and template.get("refresh") != 2:
            found.append(
                Problem(
                    "template-on-time-change-reload-rule",
                    f"template '{template.get('name')}' should be refreshed on time range change (refresh 2)",
                    dashboard=title,
                )
            )
    return found


def _panel_rules(title: str, panel: Mapping[str, Any], units: frozenset[str]) -> list[Problem]:
    found: list[Problem] = []
    name = str(panel.get("title", ""))

    def problem(rule: str, message: str) -> None:
        found.append(Problem(rule, f"Dashboard '{title}', panel '{name}' {message}", dashboard=title, panel=name))

    kind = panel.get("type")
    if kind in QUERY_PANELS and _uid(panel.get("datasource")) not in TEMPLATE_DATASOURCES:
        problem("panel-datasource-rule", "does not use a templated datasource")
    if kind in QUERY_PANELS and (not name.strip() or not str(panel.get("description", "")).strip()):
        problem("panel-title-description-rule", "has missing title or description")
    if kind in UNIT_PANELS and panel.get("fieldConfig", {}).get("defaults", {}).get("unit") not in units:
        problem("panel-units-rule", "has no or invalid units defined")
    if kind in QUERY_PANELS and not panel.get("targets"):
        problem("panel-no-targets-rule", "has no targets")
    return found


def _selector_has(selector: Selector, label: str) -> bool:
    """checkForMatcher: some matcher of `label` is exactly `label=~"$label"`."""
    return selector.has(label, "=~", f"${label}")


def _target_rules(title: str, panel: Mapping[str, Any], index: int, expr: str) -> list[Problem]:
    found: list[Problem] = []
    name = str(panel.get("title", ""))

    def problem(rule: str, message: str) -> None:
        found.append(
            Problem(
                rule,
                f"Dashboard '{title}', panel '{name}', target idx '{index}' {message}",
                dashboard=title,
                panel=name,
                target=index,
            )
        )

    for label in ("job", "instance"):
        missing = [s for s in selectors(expr) if not _selector_has(s, label)]
        if missing:
            problem(f"target-{label}-rule", f"invalid PromQL query '{expr}': {label} selector not found")
    for match in RATE_RANGE.finditer(expr):
        if match.group(1) in ("rate", "irate") and match.group(3) != "$__rate_interval":
            problem("target-rate-interval-rule", f"invalid PromQL query '{expr}': should use $__rate_interval")
    # Stricter than dashboard-linter, which looks at a selector's text (matchers included):
    # here any counter's name, however selected, must be read through rate, irate or increase.
    counted = {m.group(2).split("{")[0].strip() for m in RATE_RANGE.finditer(expr)}
    for selector in selectors(expr):
        if selector.metric and COUNTER.search(selector.metric) and selector.metric not in counted:
            problem("target-counter-agg-rule", f"counter metric '{selector.metric}' is not aggregated with rate")
    return found


def dashboard_problems(dashboard: Mapping[str, Any], units: frozenset[str]) -> list[Problem]:
    """Every rule of dashboard-linter's NewRuleSet but target-promql-rule (promtool parses the
    expressions: tests/grafana), plus mixtool's title and uid checks."""
    title = str(dashboard.get("title", ""))
    found: list[Problem] = []
    if not title:
        found.append(Problem("dashboard-title", "dashboard has no title"))
    if not dashboard.get("uid"):
        found.append(Problem("dashboard-uid", f"dashboard {title} has no UID, please set one for links to work"))
    found += _template_rules(dashboard, title)
    prometheus = (_datasource_template(dashboard) or {}).get("query") == "prometheus"
    for panel in _panels(dashboard):
        found += _panel_rules(title, panel, units)
        if prometheus and panel.get("type") in QUERY_PANELS:
            for index, target in enumerate(panel.get("targets", [])):
                found += _target_rules(title, panel, index, str(target.get("expr", "")))
    return found
