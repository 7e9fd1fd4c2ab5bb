"""The README and the runbook show the registry, the options and the failure
reasons exactly as the code has them, and the README's configuration examples
are valid."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml

from devkit.tools import tool
from exporter.backlogs import load_backlogs
from exporter.service import catalog_of
from exporter.tools.reference import metrics_table, options_table, reasons_table

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUNBOOK = ROOT / "docs" / "runbook.md"


def _between(text: str, name: str) -> str:
    start = f"<!-- {name}:start -->\n"
    end = f"<!-- {name}:end -->"
    assert start in text, f"the {name} start marker is missing"
    assert end in text, f"the {name} end marker is missing"
    return text.split(start, 1)[1].split(end, 1)[0]


def test_metrics_table_matches_the_registry() -> None:
    assert _between(README.read_text(), "metrics-table") == metrics_table()


def test_options_table_matches_the_settings() -> None:
    assert _between(README.read_text(), "options-table") == options_table()


def test_readme_opens_with_the_two_commands() -> None:
    head = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    assert head.splitlines()[0].startswith("scripts/demo")
    assert head.splitlines()[1].startswith("scripts/test")


def test_runbook_explains_every_reason() -> None:
    assert _between(RUNBOOK.read_text(), "reasons-table") == reasons_table()


def test_declared_metrics_table_matches_the_example_backlogs() -> None:
    backlogs = load_backlogs(str(ROOT / "deploy" / "backlogs.example.yml"), "--backlogs.config-file")
    table = metrics_table(catalog_of(backlogs).registry, {b.name: b.help for b in backlogs}).splitlines()
    declared = [row for row in table[2:] if row.startswith("| `orpycamcp_backlog_")]
    assert len(declared) == 9  # each family's part per backlog: pending, oldest, items, arrivals, threshold
    assert _between(README.read_text(), "declared-metrics-table") == "\n".join([*table[:2], *declared]) + "\n"


def _sharded_blocks(language: str) -> list[str]:
    section = README.read_text().split("## Sharded platforms\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def test_sharded_scrape_configurations_pass_promtool(tmp_path: Path) -> None:
    """The static and file_sd examples are valid Prometheus configurations with a `cluster` per target group."""
    (targets,) = _sharded_blocks("json")
    groups = json.loads(targets)
    assert {group["labels"]["cluster"] for group in groups} == {"east", "west"}
    sd_folder = tmp_path / "sd"
    sd_folder.mkdir()
    (sd_folder / "clusters.json").write_text(targets)
    configs = [yaml.safe_load(block) for block in _sharded_blocks("yaml") if "scrape_configs" in block]
    assert len(configs) == 2
    for number, config in enumerate(configs):
        (job,) = config["scrape_configs"]
        assert job["job_name"] == "orpycamcp-exporter"
        for static in job.get("static_configs", []):
            assert static["labels"]["cluster"]
        for sd in job.get("file_sd_configs", []):
            sd["files"] = [str(sd_folder / "*.json")]
        config["rule_files"] = [str(README.parent / "alerts" / "orpycamcp.rules.yml")]
        path = tmp_path / f"prometheus-{number}.yml"
        path.write_text(yaml.safe_dump(config))
        result = subprocess.run(
            [tool("promtool"), "check", "config", str(path)], capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS" in result.stdout
