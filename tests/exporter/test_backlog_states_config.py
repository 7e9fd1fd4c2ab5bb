"""`states` and `arrivals` of a declared backlog: parsed to what they say,
every problem refused at start (check-config too), naming the backlog and the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devkit.backlogs import example_backlogs, without
from devkit.catalog import catalog_of
from exporter.backlogs import load_declarations, parse_declarations
from exporter.declarations import Arrivals, States, Window
from exporter.errors import BacklogConfigError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "backlogs.example.yml"
SETTING = "--backlogs.config-file (ORPYCAMCP_BACKLOGS_CONFIG_FILE)"
DB = "postgresql://u:p@h/db"

# The example's KYC backlog, named kyc, with two groups, two windows and a threshold of 5.
GOOD = (
    example_backlogs("kyc_dead_letters")
    .replace("  kyc_dead_letters:", "  kyc:", 1)
    .replace("[face_match, ocr_extraction, liveness_detection, doc_processing]", "[face_match, ocr_extraction]", 1)
    .replace("windows: [1h]", "windows: [1h, 24h]", 1)
    .replace("alert_above: {1h: 10}", "alert_above: {1h: 5}", 1)
)


def replaced(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


def test_states_and_arrivals_parse_to_what_they_say() -> None:
    (kyc,) = parse_declarations(GOOD, SETTING).backlogs
    assert kyc.states == States("status", ("pending", "reprocessed", "discarded"))
    assert kyc.arrivals == Arrivals("created_at", (Window("1h", 3600), Window("24h", 86400)), (("1h", 5),))


def test_windows_are_minutes_hours_or_days() -> None:
    (kyc,) = parse_declarations(
        replaced("[1h, 24h]", "[15m, 2h, 7d, 31d]").replace("{1h: 5}", "{7d: 0}"), SETTING
    ).backlogs
    assert kyc.arrivals is not None
    assert [w.seconds for w in kyc.arrivals.windows] == [15 * 60, 2 * 3600, 7 * 86400, 31 * 86400]


def test_the_example_declares_states_and_arrivals_beside_each_other() -> None:
    kyc, outbox = load_declarations(str(EXAMPLE), SETTING).backlogs
    assert kyc.states == States("status", ("pending", "reprocessed", "discarded"))
    assert kyc.arrivals is not None
    assert [w.label for w in kyc.arrivals.windows] == ["1h"]
    assert outbox.states == States("status", ("PENDING", "FAILED", "PROCESSED"))
    assert outbox.arrivals is not None


def test_the_registry_takes_one_series_per_group_and_state_and_window() -> None:
    (kyc,) = parse_declarations(GOOD, SETTING).backlogs
    registry = catalog_of((kyc,)).registry
    items = registry.family("orpycamcp_backlog_items", "kyc")
    arrivals = registry.family("orpycamcp_backlog_arrivals", "kyc")
    threshold = registry.family("orpycamcp_backlog_arrivals_threshold", "kyc")
    assert items is not None
    assert arrivals is not None
    assert threshold is not None
    assert items.labels == ("backlog", "group", "state")
    assert set(items.combinations) == {
        ("kyc", g, s) for g in ("face_match", "ocr_extraction") for s in ("pending", "reprocessed", "discarded")
    }
    assert arrivals.labels == ("backlog", "group", "window")
    assert set(arrivals.combinations) == {
        ("kyc", g, w) for g in ("face_match", "ocr_extraction") for w in ("1h", "24h")
    }
    assert threshold.combinations == (("kyc", "1h"),)


def test_without_group_by_the_series_carry_the_backlog_and_the_state_or_window() -> None:
    text = replaced("    group_by: task_name\n    groups: [face_match, ocr_extraction]\n", "")
    (kyc,) = parse_declarations(text, SETTING).backlogs
    registry = catalog_of((kyc,)).registry
    items = registry.family("orpycamcp_backlog_items", "kyc")
    assert items is not None
    assert items.labels == ("backlog", "state")
    assert items.combinations == (("kyc", "pending"), ("kyc", "reprocessed"), ("kyc", "discarded"))


BAD: list[tuple[str, str, str, str]] = [
    ("repeated-state", replaced("[pending, reprocessed, discarded]", "[pending, pending]"), "states.values", "repeats"),
    ("state-as-number-and-text", replaced("[pending, reprocessed, discarded]", "[1, '1']"), "states.values", "repeats"),
    ("no-states", replaced("[pending, reprocessed, discarded]", "[]"), "states.values", "non-empty list"),
    ("state-bool", replaced("[pending, reprocessed, discarded]", "[pending, yes]"), "states.values", "quote it"),
    ("states-no-column", replaced("      column: status\n", ""), "states.column", "is required"),
    ("states-sql", replaced("column: status", "column: status; drop"), "states.column", "plain column"),
    (
        "states-unknown-key",
        replaced("      column: status\n", "      column: status\n      where: x\n"),
        "states.where",
        "unknown key",
    ),
    (
        "states-not-mapping",
        without(GOOD, "states") + "    states: [pending]\n",
        "states",
        "mapping",
    ),
    ("bad-window", replaced("[1h, 24h]", "[1h, 90x]"), "arrivals.windows", "'90x' is not a duration"),
    (
        "window-seconds",
        replaced("[1h, 24h]", "[30s]").replace("{1h: 5}", "{30s: 5}"),
        "arrivals.windows",
        "not a duration",
    ),
    ("window-zero", replaced("[1h, 24h]", "[0h]"), "arrivals.windows", "not a duration"),
    ("window-number", replaced("[1h, 24h]", "[3600]"), "arrivals.windows", "not a duration"),
    ("window-too-long", replaced("[1h, 24h]", "[1h, 32d]"), "arrivals.windows", "longer than 31d"),
    ("repeated-window", replaced("[1h, 24h]", "[1h, 60m]"), "arrivals.windows", "repeats a window"),
    ("too-many-windows", replaced("[1h, 24h]", "[1h, 2h, 3h, 4h, 5h]"), "arrivals.windows", "1 to 4 windows"),
    ("no-windows", replaced("[1h, 24h]", "[]"), "arrivals.windows", "1 to 4 windows"),
    ("threshold-unknown-window", replaced("{1h: 5}", "{2h: 5}"), "arrivals.alert_above", "not a declared window"),
    ("threshold-negative", replaced("{1h: 5}", "{1h: -1}"), "arrivals.alert_above.1h", "non-negative integer"),
    ("threshold-text", replaced("{1h: 5}", "{1h: many}"), "arrivals.alert_above.1h", "non-negative integer"),
    ("arrivals-no-column", replaced("      column: created_at\n", ""), "arrivals.column", "is required"),
]


@pytest.mark.parametrize(("text", "key", "problem"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_every_problem_names_the_backlog_and_the_key(text: str, key: str, problem: str) -> None:
    with pytest.raises(BacklogConfigError) as caught:
        parse_declarations(text, SETTING)
    assert (caught.value.backlog, caught.value.key) == ("kyc", key)
    assert problem in str(caught.value)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exporter", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (replaced("[1h, 24h]", "[1h, 90x]"), "backlog 'kyc', key 'arrivals.windows': '90x' is not a duration"),
        (
            replaced("[pending, reprocessed, discarded]", "[pending, reprocessed, pending]"),
            "backlog 'kyc', key 'states.values'",
        ),
    ],
    ids=["bad-window", "repeated-state"],
)
def test_check_config_refuses_in_one_line(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(text)
    done = run("check-config", "--database.url", DB, "--backlogs.config-file", str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert named in done.stderr
