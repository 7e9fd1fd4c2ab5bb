"""The mixin the standard way: installable with jsonnet-bundler (`jb install`) and
clean under mixtool's and grafana/dashboard-linter's lint rules (tests/alerts/mixinlint.py),
with the exclusions of mixin/.lint, each with its reason.

jb, mixtool and dashboard-linter are Go programs that are not available here:
what `jb install` does is done by hand, as jb does it (a local source: a symlink
`vendor/<directory name>` to the directory; a git source: the subdirectory's
files under `vendor/<host>/<owner>/<repo>/<subdir>` and, with legacyImports, a
symlink `vendor/<subdir name>` to it), and the vendored mixin is rendered by the
real jsonnet with `-J vendor` only: go-jsonnet (the implementation jb and mixtool
are built on) in this process for the local path, Debian's jsonnet command for
the git source (each full render costs the command five times go-jsonnet's CPU).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import _gojsonnet  # type: ignore[import-not-found]
import pytest
import yaml

from devkit import mixin
from devkit.tools import tool
from tests.grafana.test_dashboard import VALID_UNITS

from .mixinlint import (
    MAX_ALERT_NAME,
    LintFileError,
    Problem,
    alert_problems,
    dashboard_problems,
    load_lint_file,
    remaining,
)
from .shorten import REPO_ROOT
from .test_rules import runbook_sections

MIXIN = REPO_ROOT / "mixin"
LINT_FILE = MIXIN / ".lint"
REPOSITORY = "github.com/orpycamcp/orpycamcp-exporter"


def _alerts() -> list[dict[str, Any]]:
    document = yaml.safe_load((REPO_ROOT / "alerts" / "orpycamcp.rules.yml").read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"] if "alert" in rule]


def _dashboards() -> list[dict[str, Any]]:
    return [
        json.loads(path.read_text(encoding="utf-8")) for path in (REPO_ROOT / "grafana" / "dashboards").glob("*.json")
    ]


def _all_problems() -> list[Problem]:
    anchors = set(runbook_sections())
    found = [problem for rule in _alerts() for problem in alert_problems(rule, anchors)]
    return found + [problem for board in _dashboards() for problem in dashboard_problems(board, VALID_UNITS)]


# --- jsonnet-bundler --------------------------------------------------------------------


def test_jsonnetfile_is_what_jb_init_writes_and_declares_no_dependency() -> None:
    """jb's spec v1 (spec/v1/spec.go): version, dependencies, legacyImports; the mixin needs no library."""
    document = json.loads((MIXIN / "jsonnetfile.json").read_text(encoding="utf-8"))
    assert document == {"version": 1, "dependencies": [], "legacyImports": True}
    assert (MIXIN / "mixin.libsonnet").is_file()


def _jsonnet_in(project: Path, program: str) -> subprocess.CompletedProcess[str]:
    """The real jsonnet, run in `project` with its vendor directory as the only library path."""
    return subprocess.run(
        [tool("jsonnet"), "-J", "vendor", "-e", program], cwd=project, capture_output=True, text=True, timeout=300
    )


def _go_jsonnet_in(project: Path, program: str) -> str:
    """go-jsonnet in this process, as `jsonnet -J vendor -e` in `project`: the program a file of
    `project` (where its relative imports start), vendor/ the only library path."""
    text: str = _gojsonnet.evaluate_snippet(str(project / "main.jsonnet"), program, jpathdir=[str(project / "vendor")])
    return text


def _rendering_program(import_path: str) -> str:
    return (
        f"local m = import '{import_path}';"
        " { rules: m.prometheusRules, alerts: m.prometheusAlerts,"
        " dashboards: m.grafanaDashboards, alertmanager: m.alertmanagerConfig }"
    )


def _assert_the_checked_in_files(rendered: str) -> None:
    """The vendored mixin's rendering is the repository's own rule file and dashboards."""
    rendering = mixin.Rendering(**json.loads(rendered))
    assert mixin.rules_yaml(rendering) == mixin.RULES_PATH.read_text(encoding="utf-8")
    for name, board in rendering.dashboards.items():
        assert mixin.dashboard_json(board) == (mixin.DASHBOARDS_DIR / name).read_text(encoding="utf-8")


def test_installed_from_a_local_path_it_renders_with_the_vendor_directory_alone(tmp_path: Path) -> None:
    """`jb install ../orpycamcp-exporter/mixin`: jsonnetfile.json gains a local source and
    vendor/mixin links to the directory (jb's Local source: the name is the directory's)."""
    project = tmp_path / "monitoring"
    (project / "vendor").mkdir(parents=True)
    directory = os.path.relpath(MIXIN, project)
    manifest = {"version": 1, "dependencies": [{"source": {"local": {"directory": directory}}, "version": ""}]}
    (project / "jsonnetfile.json").write_text(json.dumps(manifest | {"legacyImports": True}), encoding="utf-8")
    (project / "vendor" / MIXIN.name).symlink_to(os.path.relpath(MIXIN, project / "vendor"))
    _assert_the_checked_in_files(_go_jsonnet_in(project, _rendering_program("mixin/mixin.libsonnet")))


def test_installed_from_git_it_renders_under_its_full_and_its_legacy_name(tmp_path: Path) -> None:
    """`jb install github.com/orpycamcp/orpycamcp-exporter/mixin@main`: the subdirectory's files
    copied under vendor/<repository>/mixin, the legacy symlink vendor/mixin beside them."""
    project = tmp_path / "monitoring"
    vendored = project / "vendor" / REPOSITORY / "mixin"
    shutil.copytree(MIXIN, vendored)
    (project / "vendor" / "mixin").symlink_to(Path(REPOSITORY) / "mixin")
    result = _jsonnet_in(project, _rendering_program(f"{REPOSITORY}/mixin/mixin.libsonnet"))
    assert result.returncode == 0, result.stderr
    _assert_the_checked_in_files(result.stdout)
    same = _jsonnet_in(
        project, f"(import '{REPOSITORY}/mixin/mixin.libsonnet')._config == (import 'mixin/mixin.libsonnet')._config"
    )
    assert (same.returncode, same.stdout.strip()) == (0, "true"), same.stderr


def test_a_vendored_mixin_missing_a_file_does_not_render(tmp_path: Path) -> None:
    """The renders above would fail on a mixin that reaches outside its own directory."""
    project = tmp_path / "monitoring"
    vendored = project / "vendor" / "mixin"
    shutil.copytree(MIXIN, vendored)
    (vendored / "lib.libsonnet").unlink()
    result = _jsonnet_in(project, "(import 'mixin/mixin.libsonnet').prometheusAlerts")
    assert result.returncode != 0
    assert "lib.libsonnet" in result.stderr


# --- the lint rules -----------------------------------------------------------------------


def test_every_exclusion_states_its_reason_and_still_excludes_something() -> None:
    exclusions = load_lint_file(LINT_FILE)
    assert exclusions
    problems = _all_problems()
    for exclusion in exclusions:
        assert len(exclusion.reason) > 40, exclusion.rule
        for entry in exclusion.entries:
            assert any(entry.matches(p) for p in problems if p.rule == exclusion.rule), f"stale: {entry}"


def test_the_mixin_passes_mixtool_and_dashboard_linter_with_its_exclusions() -> None:
    problems = _all_problems()
    left = remaining(problems, load_lint_file(LINT_FILE))
    assert left == [], "\n".join(f"[{p.rule}] {p.message}" for p in left)
    # What the exclusions hold: the platform totals' targets, which have no instance label.
    excluded = {(p.rule, p.panel) for p in problems if not p.warning}
    assert {rule for rule, _ in excluded} == {"target-instance-rule"}
    assert all(str(panel).startswith("Platform total") for _, panel in excluded)


def test_alert_names_are_at_most_40_characters() -> None:
    names = [str(rule["alert"]) for rule in _alerts()]
    assert names
    assert max(map(len, names)) <= MAX_ALERT_NAME, max(names, key=len)


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        ({"alert": "OrpycamcpDatabaseUnderSeveralClusterLabels"}, "alert-name-length"),
        ({"alert": "orpycamcp_exporter_down"}, "alert-name-camelcase"),
        ({"labels": {"severity": "page"}}, "alert-severity-rule"),
        ({"labels": {}}, "alert-severity-rule"),
        ({"annotations": {"description": "No target is scraped."}}, "alert-description-templating"),
        ({"annotations": {"description": None}}, "alert-description-missing-rule"),
        ({"annotations": {"summary": "{{ $labels.job }} is down."}}, "alert-summary-templating"),
        ({"annotations": {"summary": "every target is down"}}, "alert-summary-style"),
        ({"annotations": {"runbook_url": None}}, "alert-runbook-url-rule"),
        ({"annotations": {"runbook_url": "https://example.org/runbook.md#nowhere"}}, "alert-runbook-url-rule"),
    ],
)
def test_each_alert_rule_catches_its_breach(change: dict[str, Any], rule: str) -> None:
    alert = copy.deepcopy(_alerts()[0])
    anchors = set(runbook_sections())
    assert alert_problems(alert, anchors) == []
    for key, value in change.items():
        if isinstance(value, dict) and key == "annotations":
            for name, text in value.items():
                if text is None:
                    alert[key].pop(name)
                else:
                    alert[key][name] = text
        else:
            alert[key] = value
    assert rule in {problem.rule for problem in alert_problems(alert, anchors)}


def _platform_panel(board: dict[str, Any]) -> dict[str, Any]:
    return next(
        p
        for row in board["panels"]
        for p in [row, *row.get("panels", [])]
        if p["type"] != "row" and p["title"].startswith("Platform total")
    )


def test_a_target_without_the_instance_matcher_is_caught_unless_excluded_by_name() -> None:
    (board,) = _dashboards()
    exclusions = load_lint_file(LINT_FILE)
    renamed = copy.deepcopy(board)
    _platform_panel(renamed)["title"] = "Platform total renamed"
    left = remaining(dashboard_problems(renamed, VALID_UNITS), exclusions)
    assert [(p.rule, p.panel) for p in left] == [("target-instance-rule", "Platform total renamed")] * len(
        _platform_panel(renamed)["targets"]
    )


@pytest.mark.parametrize(
    ("breach", "rule"),
    [
        (lambda b: b["templating"]["list"].pop(0), "template-datasource-rule"),
        (
            lambda b: b["templating"]["list"].remove(next(t for t in b["templating"]["list"] if t["name"] == "job")),
            "template-job-rule",
        ),
        (
            lambda b: next(t for t in b["templating"]["list"] if t["name"] == "instance").update(allValue=".*"),
            "template-instance-rule",
        ),
        (
            lambda b: next(t for t in b["templating"]["list"] if t["name"] == "job").update(refresh=1),
            "template-on-time-change-reload-rule",
        ),
        (lambda b: _platform_panel(b).update(description=""), "panel-title-description-rule"),
        (lambda b: _platform_panel(b)["fieldConfig"]["defaults"].update(unit="furlongs"), "panel-units-rule"),
        (
            lambda b: _platform_panel(b).update(datasource={"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}),
            "panel-datasource-rule",
        ),
        (lambda b: _platform_panel(b).update(targets=[]), "panel-no-targets-rule"),
        (
            lambda b: _platform_panel(b)["targets"][0].update(expr='rate(x_total{job=~"$job"}[5m])'),
            "target-rate-interval-rule",
        ),
        (lambda b: _platform_panel(b)["targets"][0].update(expr='x_total{job=~"$job"}'), "target-counter-agg-rule"),
        (lambda b: _platform_panel(b)["targets"][0].update(expr='up{job="orpycamcp-exporter"}'), "target-job-rule"),
        (lambda b: b.update(uid=""), "dashboard-uid"),
    ],
)
def test_each_dashboard_rule_catches_its_breach(breach: Any, rule: str) -> None:
    (board,) = _dashboards()
    exclusions = load_lint_file(LINT_FILE)
    assert rule not in {p.rule for p in remaining(dashboard_problems(board, VALID_UNITS), exclusions)}
    broken = copy.deepcopy(board)
    breach(broken)
    assert rule in {p.rule for p in remaining(dashboard_problems(broken, VALID_UNITS), exclusions)}


@pytest.mark.parametrize(
    "text",
    [
        "exclusions:\n  target-instance-rule: {}\n",
        "exclusions:\n  target-instance-rule:\n    reason: ' '\n",
        "exclusions:\n  target-instance-rule:\n    reason: totals\n    entries:\n      - panel: P\n",
        "exclusions:\n  target-instance-rule:\n    reason: totals\n    entries:\n      - panel: P\n        why: x\n",
        "ignore:\n  target-instance-rule:\n    reason: totals\n",
    ],
)
def test_a_lint_file_exclusion_without_its_reason_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / ".lint"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LintFileError):
        load_lint_file(path)
