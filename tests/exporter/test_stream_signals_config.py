"""`streams.signals` of the declarations file: each a signal of its own with
its parts of the streams families, enabled and named like the others, and
every problem refused at start (check-config too), naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from devkit.catalog import catalog_of
from exporter.backlogs import parse_declarations
from exporter.errors import BacklogConfigError
from exporter.loading import load
from registry.families import StreamSignalShape
from registry.values import STREAM_GROUPS
from tests.commands import refused_in_one_line

SETTING = "--backlogs.config-file (ORPYCAMCP_BACKLOGS_CONFIG_FILE)"
REDIS = "redis://h:6379/0"
GOOD = """
streams:
  consumer_groups:
    orpycamcp.billing.events: [invoicing]
  signals:
    streams_ledger:
      consumer_groups:
        orpycamcp.billing.events: [ledger]
    streams_billing_dead:
      dead_letter_streams: [orpycamcp.billing.deadletter]
"""


def test_each_signal_apart_has_its_own_parts_of_the_streams_families() -> None:
    declared = parse_declarations(GOOD, SETTING).streams
    assert declared.consumer_groups == (("orpycamcp.billing.events", "invoicing"),)
    assert declared.signals == (
        StreamSignalShape("streams_ledger", (("orpycamcp.billing.events", "ledger"),), ()),
        StreamSignalShape("streams_billing_dead", (), ("orpycamcp.billing.deadletter",)),
    )
    catalog = catalog_of((), declared)
    registry = catalog.registry
    assert registry.signals[-2:] == ("streams_ledger", "streams_billing_dead")
    streams = registry.family("orpycamcp_stream_pending_messages", "streams")
    ledger = registry.family("orpycamcp_stream_pending_messages", "streams_ledger")
    assert streams is not None
    assert ledger is not None
    assert streams.combinations == (*STREAM_GROUPS, ("orpycamcp.billing.events", "invoicing"))
    assert ledger.combinations == (("orpycamcp.billing.events", "ledger"),)
    assert registry.family("orpycamcp_deadletter_stream_entries", "streams_ledger") is None
    dead = registry.family("orpycamcp_deadletter_stream_entries", "streams_billing_dead")
    assert dead is not None
    assert dead.combinations == (("orpycamcp.billing.deadletter",),)
    assert registry.family("orpycamcp_stream_pending_messages", "streams_billing_dead") is None
    # Its withheld undelivered counts are marked per pair; the per-reason count is the streams signal's alone.
    unknown = registry.family("orpycamcp_stream_undelivered_unknown", "streams_ledger")
    assert unknown is not None
    assert unknown.combinations == ledger.combinations
    assert registry.family("orpycamcp_stream_undelivered_unknown_groups", "streams_ledger") is None
    assert registry.family("orpycamcp_stream_undelivered_unknown_groups", "streams") is not None
    assert [catalog.signals[name].name for name in ("streams_ledger", "streams_billing_dead")] == [
        "streams_ledger",
        "streams_billing_dead",
    ]


def test_the_signals_apart_are_enabled_and_named_like_the_others(tmp_path: Path) -> None:
    path = tmp_path / "streams.yml"
    path.write_text(GOOD)
    settings = load({"redis_url": REDIS, "backlogs_config_file": str(path)}, {})
    assert settings.signals == ("streams", "streams_ledger", "streams_billing_dead")
    chosen = load({"redis_url": REDIS, "backlogs_config_file": str(path), "signals": "streams_ledger"}, {})
    assert chosen.signals == ("streams_ledger",)
    assert "2 stream signals apart" in settings.summary(":9874")


BAD: list[tuple[str, str, str, str]] = [
    ("not-prefixed", GOOD.replace("streams_ledger:", "ledger:"), "streams.signals.ledger", "streams_"),
    ("upper-case", GOOD.replace("streams_ledger:", "streams_Ledger:"), "streams.signals.streams_Ledger", "streams_"),
    (
        "pair-in-two-signals",
        GOOD.replace("[ledger]", "[ledger, invoicing]"),
        "streams.signals.streams_ledger.consumer_groups.orpycamcp.billing.events",
        "declared already",
    ),
    (
        "built-in-pair",
        GOOD.replace("orpycamcp.billing.events: [ledger]", "orpycamcp.document.events: [workflow-service]"),
        "streams.signals.streams_ledger.consumer_groups.orpycamcp.document.events",
        "built in already",
    ),
    (
        "built-in-dead-letter",
        GOOD.replace("[orpycamcp.billing.deadletter]", "[orpycamcp.signature.deadletter]"),
        "streams.signals.streams_billing_dead.dead_letter_streams",
        "built in already",
    ),
    (
        "unknown-key",
        GOOD.replace("      dead_letter_streams:", "      streams:"),
        "streams.signals.streams_billing_dead.streams",
        "unknown key",
    ),
    (
        "empty-signal",
        GOOD.replace(
            "    streams_billing_dead:\n      dead_letter_streams: [orpycamcp.billing.deadletter]\n",
            "    streams_billing_dead: {}\n",
        ),
        "streams.signals.streams_billing_dead",
        "at least one",
    ),
    ("no-signals", "streams:\n  signals: {}\n", "streams.signals", "must map"),
]


@pytest.mark.parametrize(("text", "key", "problem"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_every_problem_names_the_key(text: str, key: str, problem: str) -> None:
    with pytest.raises(BacklogConfigError) as caught:
        parse_declarations(text, SETTING)
    assert caught.value.key == key
    assert problem in str(caught.value)


def test_a_backlog_may_not_take_a_stream_signals_name() -> None:
    text = """
backlogs:
  streams_jobs:
    help: Jobs.
    scope: global
    table: public.jobs
    pending:
      status: pending
"""
    with pytest.raises(BacklogConfigError) as caught:
        parse_declarations(text, SETTING)
    assert caught.value.backlog == "streams_jobs"
    assert "kept for stream signals" in str(caught.value)


def test_check_config_refuses_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(GOOD.replace("streams_ledger:", "ledger:"))
    line = refused_in_one_line("check-config", "--redis-url", REDIS, "--backlogs.config-file", str(path))
    assert "key 'streams.signals.ledger'" in line
