"""The monitoring mixin (mixin/): the checked-in plain files are its default rendering."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from devkit import mixin
from devkit.mixin_variants import OTHER_CONFIG, RENAMED_CONFIG, TESTS_DIR, promtool_on, renamed
from devkit.tools import tool
from tests.grafana.promql import selectors

from .shorten import REPO_ROOT


@pytest.fixture(scope="module")
def default_rendering() -> dict[str, str]:
    tool("jsonnet")
    return {str(path): text for path, text in mixin.render().items()}


def test_checked_in_files_are_the_default_rendering(default_rendering: dict[str, str]) -> None:
    """Edit mixin/ and run `python -m devkit.mixin`; never edit the rendered files by hand."""
    assert set(default_rendering) == {
        "alerts/orpycamcp.rules.yml",
        "deploy/kubernetes/rules/prometheusrule.yaml",
        "alerts/alertmanager.example.yml",
        *(f"grafana/dashboards/{p.name}" for p in (REPO_ROOT / "grafana" / "dashboards").glob("*.json")),
    }
    for path, text in default_rendering.items():
        assert (REPO_ROOT / path).read_text(encoding="utf-8") == text, f"{path} drifted from mixin/: re-render it"


def test_rendering_is_deterministic(default_rendering: dict[str, str]) -> None:
    """Two renderings of the same mixin are the same bytes (no order or time taken from the run)."""
    assert {str(path): text for path, text in mixin.render().items()} == default_rendering


def test_mixin_outputs_have_the_mixin_shape() -> None:
    tool("jsonnet")
    rendering = mixin.evaluate()
    for rules in (rendering.rules, rendering.alerts):
        assert set(rules) == {"groups"}
        assert all(group["name"] and group["rules"] for group in rules["groups"])
    assert all("record" in r for g in rendering.rules["groups"] for r in g["rules"])
    assert all("alert" in r for g in rendering.alerts["groups"] for r in g["rules"])
    assert set(rendering.dashboards) == {"orpycamcp-overview.json"}
    assert rendering.dashboards["orpycamcp-overview.json"]["uid"] == "orpycamcp-overview"


RAW_SELECTOR = re.compile(r"\b(up|orpycamcp_[a-z0-9_]+)(\{[^}]*\})?")
BY_CLAUSE = re.compile(r"\bby \(([^)]*)\)")
# A recorded series read in an expression (not in a template's query text).
RECORDED = re.compile(r"\b(orpycamcp:[a-z0-9_]+:[a-z_]+)(\{[^}]*\})?")
LABEL_VALUES = re.compile(r"^label_values\((.*), *\w+\)$")


def test_config_override_reaches_every_selector() -> None:
    """Every raw series is selected by the override and every merge keeps the new cluster label."""
    tool("jsonnet")
    selector = 'job="orpycamcp", namespace="monitoring"'
    rendering = mixin.evaluate({"orpycamcpSelector": selector, "clusterLabel": "shard"})
    exprs = [str(r["expr"]) for doc in (rendering.rules, rendering.alerts) for g in doc["groups"] for r in g["rules"]]
    raw = [m for expr in exprs for m in RAW_SELECTOR.finditer(expr)]
    assert len(raw) > 30
    for match in raw:
        assert (match.group(2) or "").startswith("{" + selector), match.group(0)
    groupings = [set(map(str.strip, m.group(1).split(","))) for e in exprs for m in BY_CLAUSE.finditer(e)]
    assert not any({"cluster", "orpycamcp_cluster"} & labels for labels in groupings)
    assert sum("shard" in labels for labels in groupings) > 20
    # Recorded series keep the labels the selector fixes, and every read selects them.
    recorded = [m for expr in exprs for m in RECORDED.finditer(expr)]
    assert len(recorded) > 20
    for match in recorded:
        assert (match.group(2) or "").startswith("{" + selector), match.group(0)
    assert all({"job", "namespace"} <= labels for labels in groupings if "shard" in labels)
    # Every query and variable of the dashboard reads only the selected deployment.
    (overview,) = rendering.dashboards.values()
    variables = [v for v in overview["templating"]["list"] if v["type"] == "query"]
    queries = [str(t["expr"]) for p in overview["panels"] for t in p.get("targets", [])]
    queries += [LABEL_VALUES.sub(r"\1", str(v["query"]["query"])) for v in variables]
    (wanted,) = selectors("{" + selector + "}")
    dashboard_selectors = [s for query in queries for s in selectors(query)]
    assert len(dashboard_selectors) > 40
    assert all(set(wanted.matchers) <= set(s.matchers) for s in dashboard_selectors)
    dashboard = json.dumps(rendering.dashboards)
    assert "by (shard, signal)" in dashboard
    assert "{{shard}}" in dashboard
    assert 'shard=~\\"$cluster\\"' in dashboard
    assert "(cluster" not in dashboard


def test_a_broken_config_is_one_clear_error() -> None:
    tool("jsonnet")
    with pytest.raises(mixin.MixinError, match="not a one-unit duration"):
        mixin.evaluate({"dlqOldestPendingAge": "1h30m"})


# --- another job name, cluster label, HA labels and runbooks, rendered from the mixin ---

RULE_TESTS = sorted((REPO_ROOT / "alerts" / "tests").glob("*.test.yml"))


def test_renamed_rule_tests_name_only_the_new_job_and_cluster_label() -> None:
    assert any(path.name == "replicas.test.yml" for path in RULE_TESTS)
    for path in RULE_TESTS:
        text = renamed(path.read_text(encoding="utf-8"))
        assert 'job="orpycamcp-exporter"' not in text, path.name
        assert "orpycamcp_cluster" not in text, path.name
        assert 'replica="' not in text, path.name
        assert "blob/main/docs/runbook.md" not in text, path.name
    assert (
        renamed((REPO_ROOT / "alerts/tests/replicas.test.yml").read_text(encoding="utf-8")).count("k8s_cluster=") > 50
    )
    # The HA pair's two servers, told apart by the label the render drops (haLabels).
    assert renamed((REPO_ROOT / "alerts/tests/ha_pair.test.yml").read_text(encoding="utf-8")).count('ha_server="') > 30


# One promtool run per file, as tests/alerts/test_rules.py runs them.
@pytest.mark.parametrize("path", RULE_TESTS, ids=lambda path: path.name)
def test_renamed_job_and_cluster_label_pass_every_rule_test(path: Path, tmp_path: Path) -> None:
    """The whole promtool suite, renamed, passes against the mixin rendered for those names
    (devkit/mixin_variants.py: job, cluster label, HA labels, runbook pattern, a selector with a
    `!=` matcher, a retired database no test names)."""
    tool("jsonnet")
    rules = mixin.render(RENAMED_CONFIG)[Path("alerts/orpycamcp.rules.yml")]
    result = promtool_on(rules, [path], tmp_path, renamed)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == 1, result.stdout


def test_renamed_rule_tests_fail_against_the_default_rules(tmp_path: Path) -> None:
    """Without the override, a job named otherwise gets nothing: the renamed tests see it."""
    tool("jsonnet")
    replicas = [path for path in RULE_TESTS if path.name == "replicas.test.yml"]
    result = promtool_on(mixin.render()[Path("alerts/orpycamcp.rules.yml")], replicas, tmp_path, renamed)
    assert result.returncode != 0
    assert "OrpycamcpDlqPendingTooLong" in result.stdout + result.stderr


# --- the values the default files cannot follow: thresholds, windows, retired databases ---

OTHER_TESTS = sorted((TESTS_DIR / "other_config").glob("*.test.yml"))


def test_other_config_rule_tests_pass_against_their_render(tmp_path: Path) -> None:
    """alerts/tests/other_config/ against the mixin rendered with OTHER_CONFIG, in one promtool run:
    each check there fails when its key is ignored (devkit.mixin_mutation's config mutants)."""
    tool("jsonnet")
    assert OTHER_TESTS
    assert all(value != mixin.default_config()[key] for key, value in OTHER_CONFIG.items())
    rules = mixin.rules_yaml(mixin.evaluate_rules(OTHER_CONFIG, mixin.MIXIN_DIR))
    result = promtool_on(rules, OTHER_TESTS, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(OTHER_TESTS), result.stdout


CONFIG_ROW = re.compile(r"^\| (`\w+`(?:, `\w+`)*) \| (.+?) \| .+ \|$", re.MULTILINE)


def test_the_guide_lists_every_config_field_with_its_default() -> None:
    """docs/alerts-and-dashboard.md: one table row per `_config` field (or fields sharing a row), defaults included."""
    tool("jsonnet")
    config = mixin.default_config()
    guide = (REPO_ROOT / "docs" / "alerts-and-dashboard.md").read_text(encoding="utf-8")
    listed: dict[str, str] = {}
    for fields, defaults in CONFIG_ROW.findall(guide):
        for field in re.findall(r"`(\w+)`", fields):
            listed[field] = defaults
    assert set(listed) == set(config)
    for field, default in config.items():
        shown = default if isinstance(default, str) else json.dumps(default)
        assert f"`{shown}`" in listed[field] or (shown == "" and '`""`' in listed[field]), (field, listed[field])
