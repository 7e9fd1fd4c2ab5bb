"""The monitoring mixin (mixin/): the checked-in plain files are its default rendering."""

from __future__ import annotations

import json
import re

import pytest

from devkit import mixin
from devkit.tools import tool

from .shorten import REPO_ROOT


@pytest.fixture(scope="module")
def default_rendering() -> dict[str, str]:
    tool("jsonnet")
    return {str(path): text for path, text in mixin.render().items()}


def test_checked_in_files_are_the_default_rendering(default_rendering: dict[str, str]) -> None:
    """Edit mixin/ and run `python -m devkit.mixin`; never edit the rendered files by hand."""
    assert set(default_rendering) == {
        "alerts/orpycamcp.rules.yml",
        *(f"grafana/dashboards/{p.name}" for p in (REPO_ROOT / "grafana" / "dashboards").glob("*.json")),
    }
    for path, text in default_rendering.items():
        assert (REPO_ROOT / path).read_text(encoding="utf-8") == text, f"{path} drifted from mixin/: re-render it"


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
    assert not any("cluster" in labels for labels in groupings)
    assert sum("shard" in labels for labels in groupings) > 20
    dashboard = json.dumps(rendering.dashboards)
    assert "by (shard, signal)" in dashboard
    assert "{{shard}}" in dashboard
    assert 'shard=~\\"$cluster\\"' in dashboard
    assert "(cluster" not in dashboard


def test_a_broken_config_is_one_clear_error() -> None:
    tool("jsonnet")
    with pytest.raises(mixin.MixinError, match="not a one-unit duration"):
        mixin.evaluate({"dlqOldestPendingAge": "1h30m"})
