"""The README and the pages of docs/ show the registry, the options and the
failure reasons exactly as the code has them (`python -m devkit.doctables`
rewrites them), and their configuration examples are valid."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from devkit.doctables import TABLES, GeneratedTable, current, declared_metrics_table
from devkit.tools import tool
from exporter.options import deprecated_spellings
from exporter.settings import OPTIONS
from registry import BUILTIN

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SHARDING = ROOT / "docs" / "sharding.md"
DEPLOYMENT = ROOT / "docs" / "deployment.md"


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.marker)
def test_generated_table_is_up_to_date(table: GeneratedTable) -> None:
    assert current(table) == table.generate(), (
        f"{table.page.relative_to(ROOT)} differs from its generated {table.marker}: run python -m devkit.doctables"
    )


def test_generated_tables_name_every_family_and_option() -> None:
    """The generators leave nothing out: one row per family, per option."""
    pages = {table.marker: current(table) for table in TABLES}
    for family in BUILTIN.families:
        assert f"| `{family.name}` |" in pages["metrics-table"]
    rows = pages["options-table"].splitlines()
    for option in OPTIONS:
        # The flag, then its deprecated spellings when it has any.
        formerly = "".join(f"<br>formerly `{old}` (deprecated)" for old in deprecated_spellings(option.name))
        assert sum(row.startswith(f"| `{option.flag}`{formerly} | ") for row in rows) == 1, option.flag


def test_readme_opens_with_the_two_commands() -> None:
    head = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    assert head.splitlines()[0].startswith("scripts/demo")
    assert head.splitlines()[1].startswith("scripts/test")


def test_declared_metrics_table_has_the_families_of_each_example_backlog() -> None:
    """The example declares two backlogs; each adds its part of the pending, oldest-pending,
    items-per-state and arrivals families, and the KYC backlog its arrivals threshold."""
    rows = declared_metrics_table().splitlines()[2:]
    assert len(rows) == 9
    assert {row.split(" | ")[2] for row in rows} == {"kyc_dead_letters", "outbox"}
    assert [row.split(" | ")[0].strip("| `") for row in rows].count("orpycamcp_backlog_arrivals_threshold") == 1


def _sharded_blocks(language: str) -> list[str]:
    section = SHARDING.read_text().split("## Scrape configuration\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def test_sharded_scrape_configurations_pass_promtool(tmp_path: Path) -> None:
    """The static and file_sd examples are valid Prometheus configurations with a cluster label per target group."""
    (targets,) = _sharded_blocks("json")
    groups = json.loads(targets)
    assert {group["labels"]["orpycamcp_cluster"] for group in groups} == {"east", "west"}
    sd_folder = tmp_path / "sd"
    sd_folder.mkdir()
    (sd_folder / "clusters.json").write_text(targets)
    configs = [yaml.safe_load(block) for block in _sharded_blocks("yaml") if "scrape_configs" in block]
    assert len(configs) == 2
    for number, config in enumerate(configs):
        (job,) = config["scrape_configs"]
        assert job["job_name"] == "orpycamcp-exporter"
        for static in job.get("static_configs", []):
            assert static["labels"]["orpycamcp_cluster"]
        for sd in job.get("file_sd_configs", []):
            sd["files"] = [str(sd_folder / "*.json")]
        _assert_promtool_accepts(config, tmp_path / f"prometheus-{number}.yml")


def _assert_promtool_accepts(config: dict[str, Any], path: Path) -> None:
    """`promtool check config` accepts the configuration, with the shipped rules in place of its rule files."""
    config["rule_files"] = [str(ROOT / "alerts" / "orpycamcp.rules.yml")]
    path.write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [tool("promtool"), "check", "config", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("page", [README, DEPLOYMENT], ids=lambda page: page.name)
def test_scrape_configuration_passes_promtool(page: Path, tmp_path: Path) -> None:
    """The scrape configuration a reader copies names the job the rules select, with a timeout below the interval."""
    blocks = [
        block
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(), flags=re.DOTALL)
        if "scrape_configs" in block
    ]
    assert len(blocks) == 1, f"{page.name} should show one scrape configuration"
    config = yaml.safe_load(blocks[0])
    (job,) = config["scrape_configs"]
    assert job["job_name"] == "orpycamcp-exporter"
    assert int(job["scrape_timeout"].rstrip("s")) < int(job["scrape_interval"].rstrip("s"))
    _assert_promtool_accepts(config, tmp_path / "prometheus.yml")


def test_the_compose_prometheus_configuration_checks_as_its_comment_says() -> None:
    """The command its header gives for a check outside the compose stack works as written."""
    path = ROOT / "deploy" / "prometheus" / "prometheus.yml"
    (command,) = [
        line.removeprefix("#").strip()
        for line in path.read_text().splitlines()
        if line.removeprefix("#").strip().startswith("promtool check config")
    ]
    program, *arguments = command.split()
    result = subprocess.run([tool(program), *arguments], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
