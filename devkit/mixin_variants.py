"""The renders of the mixin the promtool tests run against, each with its test files.

    default   the checked-in rules (default `_config`): alerts/tests/*.test.yml
    renamed   another job, cluster label, HA labels, runbook and selector: the same
              files with those names replaced (`renamed`), so the whole suite passes
              against that render and fails against the default one
    other     every other `_config` value the rules read that the renamed files
              cannot follow (thresholds, `for` durations, retired databases, the
              scrape interval and the windows derived from it):
              alerts/tests/other_config/*.test.yml, written for those values

tests/alerts/test_mixin.py runs them; devkit/mixin_mutation.py runs them against
each mutant of mixin/.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devkit.tools import tool

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS_DIR = REPO_ROOT / "alerts" / "tests"
RULES_NAME = "orpycamcp.rules.yml"

RUNBOOK = "https://github.com/orpycamcp/orpycamcp-exporter/blob/main/docs/runbook.md#"
OTHER_RUNBOOK = "https://runbooks.example.org/orpycamcp/"
RENAMED_CONFIG: dict[str, Any] = {
    # A second matcher, not `=`: selects the raw series, kept by no recorded one.
    "orpycamcpSelector": 'job="orpycamcp", env!="staging"',
    "clusterLabel": "k8s_cluster",
    "haLabels": ["ha_server"],
    "runbookUrlPattern": OTHER_RUNBOOK + "%s",
    # A database no test names: its matcher in every read of the databases known changes nothing else.
    "retiredDatabases": ["9999/1"],
}
RENAMES = (
    (re.compile(r'\bjob="orpycamcp-exporter"'), 'job="orpycamcp"'),
    (re.compile(r"^(\s+)job: orpycamcp-exporter$", re.MULTILINE), r"\1job: orpycamcp"),
    (re.compile(r"\bjob orpycamcp-exporter\b"), "job orpycamcp"),
    (re.compile(r"\borpycamcp_cluster\b"), "k8s_cluster"),
    # The HA pair's external label (alerts/tests/ha_pair.test.yml).
    (re.compile(r'\breplica="'), 'ha_server="'),
    (re.compile(re.escape(RUNBOOK)), OTHER_RUNBOOK),
)


def renamed(text: str) -> str:
    """A promtool test file for the `renamed` render: job `orpycamcp`, cluster label
    `k8s_cluster`, HA label `ha_server`, runbooks elsewhere."""
    for pattern, replacement in RENAMES:
        text = pattern.sub(replacement, text)
    return text


def unchanged(text: str) -> str:
    return text


# Every key the rules read, at a value other than its default, that the default
# test files cannot follow; alerts/tests/other_config/ is written for these.
OTHER_CONFIG: dict[str, Any] = {
    "retiredDatabases": ["1002/16384"],
    "databaseMemory": "2h",
    "databaseVanishedFor": "7m",
    "scrapeInterval": "20s",
    "samplesFreshScrapes": 6,
    "totalsWarmUp": "4m",
    "dataMaxAge": "150s",
    "exporterTtl": "50s",
    "valueKeepFiringFor": "3m",
}


@dataclass(frozen=True)
class Variant:
    name: str
    config: Mapping[str, Any]
    tests: tuple[Path, ...]
    transform: Callable[[str], str]


def variants() -> tuple[Variant, ...]:
    default_tests = tuple(sorted(TESTS_DIR.glob("*.test.yml")))
    return (
        Variant("default", {}, default_tests, unchanged),
        Variant("renamed", RENAMED_CONFIG, default_tests, renamed),
        Variant("other", OTHER_CONFIG, tuple(sorted((TESTS_DIR / "other_config").glob("*.test.yml"))), unchanged),
    )


def promtool_on(
    rules: str, tests: Sequence[Path], directory: Path, transform: Callable[[str], str] = unchanged
) -> subprocess.CompletedProcess[str]:
    """Runs `tests` (transformed) against `rules` in one promtool run; each test file
    names ../orpycamcp.rules.yml, as the checked-in ones do."""
    (directory / RULES_NAME).write_text(rules, encoding="utf-8")
    (directory / "tests").mkdir(exist_ok=True)
    copies = []
    for path in tests:
        copy = directory / "tests" / path.name
        copy.write_text(transform(path.read_text(encoding="utf-8")), encoding="utf-8")
        copies.append(str(copy))
    return subprocess.run(
        [tool("promtool"), "test", "rules", *copies], capture_output=True, text=True, timeout=600, check=False
    )
