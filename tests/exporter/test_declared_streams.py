"""The `streams:` key of the declarations file: the example parses to what it
says, a file may declare streams alone, and every bad name is refused at
start (check-config too), naming the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devkit.catalog import catalog_of
from exporter.backlogs import load_declarations, parse_declarations
from exporter.declared_streams import DeclaredStreams
from exporter.errors import BacklogConfigError, ConfigError
from exporter.loading import load
from exporter.signals import streams
from registry.families import DEADLETTER_ENTRIES, DEADLETTER_OLDEST, STREAM_OLDEST_PENDING, STREAM_PENDING
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "backlogs.example.yml"
SETTING = "--backlogs.config-file (ORPYCAMCP_BACKLOGS_CONFIG_FILE)"
DB = "postgresql://u:p@h/db"
REDIS = "redis://h:6379/0"

STREAMS_ONLY = """
streams:
  consumer_groups:
    orpycamcp.billing.events: [invoicing, ledger]
    "orpycamcp.document.events": [archive-service]
  dead_letter_streams: [orpycamcp.billing.deadletter, "billing dead letters (v2)"]
"""


def test_the_example_declares_the_billing_streams() -> None:
    declared = load_declarations(str(EXAMPLE), SETTING)
    assert declared.streams == DeclaredStreams(
        consumer_groups=(("orpycamcp.billing.events", "invoicing"), ("orpycamcp.billing.events", "ledger")),
        dead_letter_streams=("orpycamcp.billing.deadletter",),
    )
    assert [backlog.name for backlog in declared.backlogs] == ["kyc_dead_letters", "outbox"]


def test_a_file_may_declare_streams_alone() -> None:
    declared = parse_declarations(STREAMS_ONLY, SETTING)
    assert declared.backlogs == ()
    assert declared.streams.consumer_groups == (
        ("orpycamcp.billing.events", "invoicing"),
        ("orpycamcp.billing.events", "ledger"),
        # A new group of a built-in stream is a new pair: allowed.
        ("orpycamcp.document.events", "archive-service"),
    )
    assert declared.streams.dead_letter_streams == ("orpycamcp.billing.deadletter", "billing dead letters (v2)")


def test_declared_streams_extend_the_closed_sets_after_the_built_in_ones() -> None:
    declared = parse_declarations(STREAMS_ONLY, SETTING).streams
    registry = catalog_of((), declared).registry
    pairs = STREAM_GROUPS + declared.consumer_groups
    dead = tuple((stream,) for stream in DEADLETTER_STREAMS + declared.dead_letter_streams)
    for family, combinations in (
        (STREAM_PENDING, pairs),
        (STREAM_OLDEST_PENDING, pairs),
        (DEADLETTER_ENTRIES, dead),
        (DEADLETTER_OLDEST, dead),
    ):
        extended = registry.family(family.name, "streams")
        assert extended is not None
        assert extended.combinations == combinations
        assert (extended.labels, extended.help, extended.sparse) == (family.labels, family.help, family.sparse)
    # No new signal: the one streams signal reads them all.
    assert registry.signals == ("dlq", "preservation", "audit_chain", "migration_lock", "housekeeping", "streams")


def test_the_streams_signal_reads_what_the_extended_registry_declares() -> None:
    declared = parse_declarations(STREAMS_ONLY, SETTING).streams
    catalog = catalog_of((), declared)
    assert catalog.signals["streams"] is not streams.SIGNAL
    assert list(catalog.signals) == ["dlq", "preservation", "audit_chain", "migration_lock", "housekeeping", "streams"]
    assert catalog_of(()).signals["streams"] is streams.SIGNAL


BAD: list[tuple[str, str, str, str]] = [
    ("empty-stream", 'streams:\n  dead_letter_streams: [""]\n', "streams.dead_letter_streams", "is empty"),
    ("empty-group", "streams:\n  consumer_groups:\n    s: ['']\n", "streams.consumer_groups.s", "is empty"),
    (
        "control-in-stream",
        'streams:\n  dead_letter_streams: ["a\\tb"]\n',
        "streams.dead_letter_streams",
        "control character U+0009",
    ),
    (
        "newline-in-group",
        'streams:\n  consumer_groups:\n    s: ["a\\nb"]\n',
        "streams.consumer_groups.s",
        "control character U+000A",
    ),
    (
        "line-separator",
        'streams:\n  dead_letter_streams: ["a\\u2028b"]\n',
        "streams.dead_letter_streams",
        "U+2028",
    ),
    ("not-a-string", "streams:\n  dead_letter_streams: [42]\n", "streams.dead_letter_streams", "quote it"),
    (
        "number-as-stream",
        "streams:\n  consumer_groups:\n    7: [g]\n",
        "streams.consumer_groups",
        "not a string",
    ),
    ("repeated-stream", "streams:\n  dead_letter_streams: [a, b, a]\n", "streams.dead_letter_streams", "'a'"),
    ("repeated-group", "streams:\n  consumer_groups:\n    s: [g, g]\n", "streams.consumer_groups.s", "twice"),
    (
        "built-in-stream",
        "streams:\n  dead_letter_streams: [orpycamcp.workflow.deadletter]\n",
        "streams.dead_letter_streams",
        "built in already",
    ),
    (
        "built-in-pair",
        "streams:\n  consumer_groups:\n    orpycamcp.workflow.events: [notification-service]\n",
        "streams.consumer_groups.orpycamcp.workflow.events",
        "built in already",
    ),
    ("no-groups", "streams:\n  consumer_groups:\n    s: []\n", "streams.consumer_groups.s", "non-empty list"),
    ("groups-not-a-map", "streams:\n  consumer_groups: [s]\n", "streams.consumer_groups", "map each stream"),
    ("unknown-key", "streams:\n  groups: {s: [g]}\n", "streams.groups", "unknown key"),
    ("empty-streams", "streams: {}\n", "streams", "at least one"),
    ("streams-null", "streams:\n", "streams", "at least one"),
]


@pytest.mark.parametrize(("text", "key", "problem"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_every_bad_name_is_refused_naming_the_key(text: str, key: str, problem: str) -> None:
    with pytest.raises(BacklogConfigError) as caught:
        parse_declarations(text, SETTING)
    assert (caught.value.backlog, caught.value.key) == (None, key)
    assert problem in str(caught.value)
    assert SETTING in str(caught.value)


def test_a_lone_surrogate_is_refused_by_the_loader_before_any_name_is_read() -> None:
    with pytest.raises(BacklogConfigError, match="invalid Unicode character escape code"):
        parse_declarations('streams:\n  dead_letter_streams: ["a\\ud800"]\n', SETTING)


def test_a_stream_given_twice_is_refused_with_its_line() -> None:
    text = "streams:\n  consumer_groups:\n    s: [a]\n    s: [b]\n"
    with pytest.raises(BacklogConfigError, match=r"refused \(line 4\): key 's' is given twice"):
        parse_declarations(text, SETTING)


def test_declared_streams_need_redis(tmp_path: Path) -> None:
    path = tmp_path / "streams.yml"
    path.write_text(STREAMS_ONLY)
    settings = load({"redis_url": REDIS, "backlogs_config_file": str(path)}, {})
    assert settings.signals == ("streams",)
    assert settings.backlogs == ()
    assert settings.streams.dead_letter_streams == ("orpycamcp.billing.deadletter", "billing dead letters (v2)")
    with pytest.raises(ConfigError, match=r"declared streams .* need it"):
        load({"database_url": DB, "backlogs_config_file": str(path)}, {})


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exporter", *args], capture_output=True, text=True, timeout=120)


def test_check_config_accepts_streams_alone(tmp_path: Path) -> None:
    path = tmp_path / "streams.yml"
    path.write_text(STREAMS_ONLY)
    done = run("check-config", "--redis.url", REDIS, "--backlogs.config-file", str(path))
    assert done.returncode == 0, done.stderr
    assert "signals streams " in done.stdout
    assert "streams declared: 3 consumer groups, 2 dead-letter streams" in done.stdout


def test_check_config_refuses_a_bad_stream_name_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text('streams:\n  dead_letter_streams: ["billing\\u0007"]\n')
    done = run("check-config", "--redis.url", REDIS, "--backlogs.config-file", str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "key 'streams.dead_letter_streams'" in done.stderr
    assert "U+0007" in done.stderr
