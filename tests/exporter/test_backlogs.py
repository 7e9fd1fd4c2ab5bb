"""The backlogs file: the example parses to what it says, and every problem is
refused at start, naming the backlog and the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from exporter.backlogs import load_declarations, parse_declarations
from exporter.conditions import Condition
from exporter.declarations import Scope
from exporter.errors import BacklogConfigError, ConfigError
from exporter.loading import load

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "backlogs.example.yml"
SETTING = "--backlogs.config-file (ORPYCAMCP_BACKLOGS_FILE)"
DB = "postgresql://u:p@h/db"
REDIS = "redis://h:6379/0"

GOOD = """
backlogs:
  kyc:
    help: KYC dead letters.
    scope: tenant
    table: dead_letter_queue
    pending:
      status: pending
    group_by: task_name
    groups: [face_match, ocr_extraction]
    oldest: created_at
"""


def test_the_example_declares_both_backlogs() -> None:
    kyc, outbox = load_declarations(str(EXAMPLE), SETTING).backlogs
    assert (kyc.name, kyc.scope, kyc.table, kyc.group_by, kyc.oldest) == (
        "kyc_dead_letters",
        Scope.TENANT,
        ("dead_letter_queue",),
        "task_name",
        "created_at",
    )
    assert kyc.pending == (Condition("status", ("pending",)),)
    assert kyc.groups == ("face_match", "ocr_extraction", "liveness_detection", "doc_processing")
    assert (outbox.name, outbox.scope, outbox.table) == ("outbox", Scope.GLOBAL, ("public", "outbox"))
    assert outbox.pending == (Condition("status", ("PROCESSED",), negated=True),)
    assert outbox.groups == ("0", "1", "2", "3")  # integers written as numbers become label text


def replaced(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


# GOOD with one text of its kyc backlog replaced: (id, the text, what replaces it, the key named, the problem).
KYC_VARIANTS: list[tuple[str, str, str, str, str]] = [
    ("unknown-key", "oldest: created_at", "oldest: created_at\n    query: SELECT 1", "query", "unknown key"),
    ("group-by-without-groups", "    groups: [face_match, ocr_extraction]\n", "", "groups", "required with group_by"),
    ("groups-without-group-by", "    group_by: task_name\n", "", "groups", "needs group_by"),
    ("duplicate-groups", "[face_match, ocr_extraction]", "[face_match, face_match]", "groups", "repeats"),
    ("duplicate-groups-as-text", "[face_match, ocr_extraction]", "[1, '1']", "groups", "repeats a group"),
    ("missing-help", "    help: KYC dead letters.\n", "", "help", "required"),
    ("missing-pending", "    pending:\n      status: pending\n", "", "pending", "required"),
    ("empty-pending", "    pending:\n      status: pending\n", "    pending: {}\n", "pending", "at least one"),
    ("bad-scope", "scope: tenant", "scope: cluster", "scope", "tenant or global"),
    ("table-injection", "table: dead_letter_queue", "table: 'x; DROP TABLE tenants'", "table", "plain"),
    ("table-quote", "table: dead_letter_queue", "table: 'x\"y'", "table", "plain"),
    ("qualified-tenant-table", "table: dead_letter_queue", "table: public.dead_letter_queue", "table", "plain"),
    ("global-without-schema", "scope: tenant", "scope: global", "table", "schema.table"),
    ("column-expression", "group_by: task_name", "group_by: lower(task_name)", "group_by", "plain"),
    ("oldest-expression", "oldest: created_at", "oldest: 'now() -- '", "oldest", "plain"),
    (
        "pending-column",
        "status: pending",
        "'status = status OR true': pending",
        "pending.status = status OR true",
        "plain",
    ),
    ("boolean-value", "status: pending", "status: yes", "pending.status", "quote it"),
    ("null-value", "status: pending", "status: ~", "pending.status", "quote it"),
    ("empty-list", "status: pending", "status: []", "pending.status", "non-empty list"),
    ("not-scalar", "status: pending", "status: {not: PROCESSED}", "pending.status.not", "non-empty list"),
    ("not-other-key", "status: pending", "status: {is: [x]}", "pending.status", "{not: [values]}"),
    ("timezone-unknown", "oldest: created_at", "oldest: created_at\n    timezone: Mars/Olympus", "timezone", "IANA"),
    ("timezone-path", "oldest: created_at", "oldest: created_at\n    timezone: /etc/passwd", "timezone", "IANA"),
    ("timezone-number", "oldest: created_at", "oldest: created_at\n    timezone: 5", "timezone", "IANA"),
    # A directory of the zone database, and a name too long for a path: refused, never opened.
    ("timezone-directory", "oldest: created_at", "oldest: created_at\n    timezone: America", "timezone", "IANA"),
    ("timezone-long", "oldest: created_at", "oldest: created_at\n    timezone: " + "A" * 300, "timezone", "IANA"),
    ("timezone-climbs", "oldest: created_at", "oldest: created_at\n    timezone: ../zone.tab", "timezone", "IANA"),
    ("timezone-without-oldest", "    oldest: created_at", "    timezone: UTC", "timezone", "needs oldest"),
]
# Other texts: (id, the text, the backlog named, the key named, the problem).
OTHERS: list[tuple[str, str, str | None, str | None, str]] = [
    ("builtin-name", replaced("  kyc:", "  dlq:"), "dlq", None, "built-in"),
    ("bad-name", replaced("  kyc:", "  Kyc-Queue:"), "Kyc-Queue", None, "[a-z]"),
    ("long-name", replaced("  kyc:", "  " + "k" * 41 + ":"), "k" * 41, None, "at most 40"),
    ("not-a-mapping", "backlogs:\n  kyc: [1, 2]\n", "kyc", None, "mapping"),
    ("top-level-key", GOOD + "extra: 1\n", None, "extra", "only version, tenants, signals, backlogs, streams"),
    ("no-backlogs", "backlogs: {}\n", None, "backlogs", "each backlog"),
]
BAD = [(case, replaced(old, new), "kyc", key, problem) for case, old, new, key, problem in KYC_VARIANTS] + OTHERS


@pytest.mark.parametrize(("text", "backlog", "key", "problem"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_every_problem_names_the_backlog_and_the_key(
    text: str, backlog: str | None, key: str | None, problem: str
) -> None:
    with pytest.raises(BacklogConfigError) as caught:
        parse_declarations(text, SETTING)
    assert (caught.value.backlog, caught.value.key) == (backlog, key)
    assert problem in str(caught.value)
    assert SETTING in str(caught.value)


def test_a_backlog_declared_twice_is_refused_with_its_line() -> None:
    text = GOOD + GOOD.split("backlogs:\n", 1)[1]
    with pytest.raises(BacklogConfigError, match=r"refused \(line 12\): key 'kyc' is given twice"):
        parse_declarations(text, SETTING)


@pytest.mark.parametrize(
    ("written", "zone"), [(None, "UTC"), ("UTC", "UTC"), ("server", "server"), ("America/Bogota", "America/Bogota")]
)
def test_the_zone_of_the_oldest_column(written: str | None, zone: str) -> None:
    text = GOOD if written is None else replaced("oldest: created_at", f"oldest: created_at\n    timezone: {written}")
    (kyc,) = parse_declarations(text, SETTING).backlogs
    assert kyc.timezone == zone


def test_invalid_yaml_is_refused() -> None:
    with pytest.raises(BacklogConfigError, match="not valid YAML"):
        parse_declarations("backlogs: [unclosed", SETTING)


def test_settings_read_the_file_and_enable_the_backlogs(tmp_path: Path) -> None:
    path = tmp_path / "b.yml"
    path.write_text(GOOD)
    settings = load({"database_url": DB}, {"ORPYCAMCP_BACKLOGS_FILE": str(path)})
    assert settings.signals == ("dlq", "preservation", "audit_chain", "migration_lock", "housekeeping", "kyc")
    assert [b.name for b in settings.backlogs] == ["kyc"]
    only = load({"database_url": DB, "backlogs_config_file": str(path), "signals": "kyc,dlq"}, {})
    assert only.signals == ("dlq", "kyc")
    with pytest.raises(ConfigError, match="unknown signal 'kyc'"):
        load({"database_url": DB, "signals": "kyc"}, {})
    with pytest.raises(ConfigError, match="need it"):
        load({"redis_url": "redis://h", "backlogs_config_file": str(path)}, {})
    with pytest.raises(ConfigError, match="cannot read"):
        load({"database_url": DB, "backlogs_config_file": str(tmp_path / "missing.yml")}, {})


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exporter", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (replaced("[face_match, ocr_extraction]", "[face_match, face_match]"), "backlog 'kyc', key 'groups'"),
        (replaced("  kyc:", "  streams:"), "backlog 'streams'"),
        (replaced("oldest: created_at", "oldest: created_at\n    timezone: Europe/Atlantis"), "key 'timezone'"),
    ],
)
def test_check_config_exits_2_naming_the_backlog_and_key(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(text)
    done = run("check-config", "--database.url", DB, "--backlogs.config-file", str(path))
    assert done.returncode == 2
    assert named in done.stderr
    assert done.stdout == ""


def test_check_config_accepts_the_example() -> None:
    done = run("check-config", "--database.url", DB, "--redis.url", REDIS, "--backlogs.config-file", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    signals = "dlq,preservation,audit_chain,migration_lock,housekeeping,streams,kyc_dead_letters,outbox"
    assert f"signals {signals}" in done.stdout
    assert "streams declared: 2 consumer groups, 1 dead-letter stream" in done.stdout


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('    group_by: kind\n    groups: [a, "x\\ty"]\n', "holds a control character"),
        ("    arrivals: {column: c, windows: [1h], alert_above: {1h: " + "9" * 400 + "}}\n", "64-bit range"),
    ],
)
def test_what_serve_could_not_register_is_refused_at_load(extra: str, problem: str) -> None:
    text = "backlogs:\n  b:\n    help: x\n    scope: tenant\n    table: t\n    pending: {s: 1}\n" + extra
    with pytest.raises(BacklogConfigError, match=problem) as refused:
        parse_declarations(text, SETTING)
    assert "\n" not in str(refused.value)


def test_check_config_refuses_each_missing_source_once() -> None:
    # The example declares backlogs and streams: with no URL at all, one refusal
    # names each missing source, and nothing repeats them.
    done = run("check-config", "--backlogs.config-file", str(EXAMPLE))
    assert done.returncode == 2
    refusals = done.stderr.splitlines()
    assert len(refusals) == 2, done.stderr
    assert "the declared backlogs" in refusals[0]
    assert "the declared streams" in refusals[1]
    assert done.stdout == ""
