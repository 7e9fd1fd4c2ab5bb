"""The dashboard builders of mixin/dashboards/grafana.libsonnet: layout, queries, mappings."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from devkit.mixin import MIXIN_DIR
from devkit.tools import tool


def evaluate(expression: str) -> Any:
    """`expression` with `g` bound to the builders."""
    program = f"local g = import 'dashboards/grafana.libsonnet'; {expression}"
    result = subprocess.run(
        [tool("jsonnet"), "-J", str(MIXIN_DIR), "-e", program], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        raise AssertionError(result.stderr)
    return json.loads(result.stdout)


def positions(panels: list[dict[str, Any]]) -> list[tuple[str, int, int, int, int]]:
    return [(p["title"], p["gridPos"]["x"], p["gridPos"]["y"], p["gridPos"]["w"], p["gridPos"]["h"]) for p in panels]


def test_layout_places_left_to_right_wraps_and_starts_rows_on_a_line_of_their_own() -> None:
    panels = evaluate("""
      local ts(id, width, height) = g.timeseries(id, 'p' + id, 'described', 'short', [], width=width, height=height);
      g.layout([
        ts(1, 8, 5), ts(2, 8, 7), ts(3, 12, 4),
        g.row('R', 10),
        ts(4, 24, 3),
        ts(5, 6, 2),
        g.row('S', 11, repeat='v'),
        ts(6, 12, 8), ts(7, 12, 8),
      ])
    """)
    assert positions(panels) == [
        ("p1", 0, 0, 8, 5),
        ("p2", 8, 0, 8, 7),
        ("p3", 0, 7, 12, 4),  # does not fit beside p2: next line, below the highest of the line
        ("R", 0, 11, 24, 1),
        ("p4", 0, 12, 24, 3),
        ("p5", 0, 15, 6, 2),
        ("S", 0, 17, 24, 1),
        ("p6", 0, 18, 12, 8),
        ("p7", 12, 18, 12, 8),
    ]
    assert panels[6]["repeat"] == "v"
    assert all("size" not in panel for panel in panels)


def test_a_panel_wider_than_the_grid_is_one_clear_error() -> None:
    with pytest.raises(AssertionError, match="panel wide is wider than the grid"):
        evaluate("g.layout([g.timeseries(1, 'wide', 'described', 'short', [], width=25)])")


def test_queries_get_ref_ids_and_the_panel_kind_decides_instant_or_range() -> None:
    stat, series = evaluate("""
      local queries = [g.query('a', '{{x}}'), g.query('b')];
      [g.stat(1, 't', 'described', 'none', queries, noValue='unknown'), g.timeseries(2, 't', 'described', 's', queries)]
    """)
    assert [(t["refId"], t["expr"], t["legendFormat"], t["instant"]) for t in stat["targets"]] == [
        ("A", "a", "{{x}}", True),
        ("B", "b", "__auto", True),
    ]
    assert [(t["refId"], t["range"]) for t in series["targets"]] == [("A", True), ("B", True)]


def test_mappings_keep_the_order_given() -> None:
    mappings = evaluate("g.mappings([g.value('1', 'up', 'green'), g.special('nan', 'never', 'red'), g.unknown])")
    assert mappings == [
        {"type": "value", "options": {"1": {"text": "up", "color": "green", "index": 0}}},
        {"type": "special", "options": {"match": "nan", "result": {"text": "never", "color": "red", "index": 1}}},
        {"type": "special", "options": {"match": "null", "result": {"text": "unknown", "color": "text", "index": 2}}},
    ]


def test_the_documented_row_is_a_few_lines_that_render(tmp_path: Path) -> None:
    """docs/alerts-and-dashboard.md, "Adding a panel": its example pasted above the per-backlog row renders,
    placed by the layout after every panel before it."""
    guide = (MIXIN_DIR.parent / "docs" / "alerts-and-dashboard.md").read_text(encoding="utf-8")
    example = guide.split("## Adding a panel", 1)[1].split("```jsonnet\n", 1)[1].split("```", 1)[0]
    mixin_copy = tmp_path / "mixin"
    shutil.copytree(MIXIN_DIR, mixin_copy)
    overview = mixin_copy / "dashboards" / "orpycamcp-overview.libsonnet"
    marker = "      // --- one row per declared backlog"
    source = overview.read_text(encoding="utf-8")
    assert source.count(marker) == 1
    overview.write_text(source.replace(marker, example + marker), encoding="utf-8")
    result = subprocess.run(
        [tool("jsonnet"), "-J", str(mixin_copy), "-e", "(import 'mixin.libsonnet').grafanaDashboards"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (dashboard,) = json.loads(result.stdout).values()
    titles = [panel["title"] for panel in dashboard["panels"]]
    added = titles.index("Consumer groups at a glance")
    assert titles[added : added + 4] == [
        "Consumer groups at a glance",
        "Consumers known per group",
        "Idlest group",
        "Backlog $backlog: items per state and arrivals",
    ]
    before, row, first, second = dashboard["panels"][added - 1 : added + 3]
    assert row["gridPos"]["y"] == before["gridPos"]["y"] + before["gridPos"]["h"]
    assert (first["gridPos"]["x"], second["gridPos"]["x"]) == (0, 12)
    assert first["gridPos"]["y"] == second["gridPos"]["y"] == row["gridPos"]["y"] + 1
    assert 'job="orpycamcp-exporter"' in first["targets"][0]["expr"]
