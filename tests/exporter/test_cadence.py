"""Each signal's own cadence: `ttl:` and `deadline:` per declaration,
`--signals.ttl` and `--signals.deadline` per built-in signal, else the global
flags; each refusal one line naming its key, `check-config` and `serve`
refusing alike; the caches and the scrape holding each signal to its own."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from exporter.cadence import Cadence, PerSignal, seconds
from exporter.errors import InvalidSettings
from exporter.loading import load
from exporter.options import Refused
from exporter.service import build_exporter, source_timeouts
from exporter.signals import Source
from tests.hypotheses import examples

DB = "postgresql://u:secret@127.0.0.1:9/platform"
REDIS = "redis://127.0.0.1:9/0"
OUTBOX = """
backlogs:
  outbox:
    help: Outbox rows not yet sent.
    scope: global
    table: public.outbox
    pending:
      status: pending
{extra}
streams:
  signals:
    streams_payments:
      consumer_groups:
        payments: [ledger]
{stream_extra}
"""


def declarations(tmp_path: Path, extra: str = "", stream_extra: str = "") -> str:
    path = tmp_path / "declarations.yml"
    path.write_text(OUTBOX.format(extra=extra, stream_extra=stream_extra))
    return str(path)


def refusals(values: dict[str, str], env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(InvalidSettings) as raised:
        load(values, env or {})
    return [str(error) for error in raised.value.errors]


def test_every_signal_inherits_the_global_flags() -> None:
    settings = load({"database_url": DB, "ttl": "40", "deadline": "7"}, {})
    assert settings.cadences == ()
    assert {name: settings.cadence(name) for name in settings.signals} == {
        "dlq": Cadence(40, 7),
        "preservation": Cadence(40, 7),
        "audit_chain": Cadence(40, 7),
        "migration_lock": Cadence(40, 7),
        "housekeeping": Cadence(40, 7),
    }


def test_a_declaration_and_a_flag_give_their_signals_their_own(tmp_path: Path) -> None:
    path = declarations(tmp_path, "    ttl: 5m\n    deadline: 40s", "      ttl: 90")
    settings = load(
        {
            "database_url": DB,
            "redis_url": REDIS,
            "backlogs_config_file": path,
            "signals_ttl": "audit_chain=1h",
            "signals_deadline": "dlq=12.5",
        },
        {},
    )
    assert dict(settings.cadences) == {
        "dlq": Cadence(30, 12.5),
        "audit_chain": Cadence(3600, 10),
        "outbox": Cadence(300, 40),
        "streams_payments": Cadence(90, 10),
    }
    assert settings.cadence("preservation") == Cadence(30, 10)
    assert "outbox every 300s (deadline 40s)" in settings.summary("x")
    # The clients' statement timeouts: the longest deadline of the signals reading each source.
    assert source_timeouts(settings, Source.POSTGRES).deadline == 40
    assert source_timeouts(settings, Source.REDIS).deadline == 10


def test_the_environment_gives_them_as_the_flags_do() -> None:
    settings = load({"database_url": DB}, {"ORPYCAMCP_SIGNALS_TTL": "dlq=2m", "ORPYCAMCP_SIGNALS_DEADLINE": "dlq=20"})
    assert settings.cadence("dlq") == Cadence(120, 20)


@pytest.mark.parametrize(
    ("values", "extra", "expected"),
    [
        (
            {"signals_ttl": "dlq=5"},
            "",
            "invalid setting --signals.ttl (ORPYCAMCP_SIGNALS_TTL): signal 'dlq': its deadline must be below its TTL"
            " (10 >= 5)",
        ),
        (
            {"signals_deadline": "preservation=30s"},
            "",
            "invalid setting --signals.deadline (ORPYCAMCP_SIGNALS_DEADLINE): signal 'preservation': its deadline"
            " must be below its TTL (30 >= 30)",
        ),
        (
            {"signals_ttl": "nope=60"},
            "",
            "invalid setting --signals.ttl (ORPYCAMCP_SIGNALS_TTL): signal 'nope' is not enabled"
            " (enabled: dlq, preservation, audit_chain, migration_lock, housekeeping, outbox)",
        ),
        (
            {"signals_ttl": "outbox=60"},
            "    ttl: 5m",
            "invalid setting --signals.ttl (ORPYCAMCP_SIGNALS_TTL): signal 'outbox' declares its ttl in"
            " --backlogs.config-file (ORPYCAMCP_BACKLOGS_CONFIG_FILE): set it once",
        ),
        (
            {},
            "    ttl: 5",
            "invalid setting --backlogs.config-file (ORPYCAMCP_BACKLOGS_CONFIG_FILE): backlog 'outbox', key 'ttl':"
            " signal 'outbox': its deadline must be below its TTL (10 >= 5)",
        ),
        (
            {"signals_ttl": "dlq=x"},
            "",
            "invalid setting --signals.ttl (ORPYCAMCP_SIGNALS_TTL): signal 'dlq': 'x' is not a duration (seconds,"
            " or 90s, 5m, 1h)",
        ),
    ],
)
def test_each_refusal_is_one_line_naming_its_key(
    tmp_path: Path, values: dict[str, str], extra: str, expected: str
) -> None:
    path = str(tmp_path / "backlogs.yml")
    Path(path).write_text(OUTBOX.split("streams:")[0].format(extra=extra))
    assert refusals({"database_url": DB, "backlogs_config_file": path, **values}) == [expected]


def test_a_declaration_refuses_its_own_deadline_at_its_ttl_with_the_file(tmp_path: Path) -> None:
    path = declarations(tmp_path, "", "      ttl: 1m\n      deadline: 2m")
    [refusal] = refusals({"database_url": DB, "redis_url": REDIS, "backlogs_config_file": path})
    assert refusal.endswith("key 'streams.signals.streams_payments.deadline': must be below the ttl (120 >= 60)")
    assert "\n" not in refusal


@pytest.mark.parametrize("command", ["check-config", "serve"])
def test_check_config_and_serve_refuse_alike(command: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "exporter", command, "--database.url", DB, "--signals.deadline", "dlq=31"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin"},
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "orpycamcp-exporter: invalid setting --signals.deadline (ORPYCAMCP_SIGNALS_DEADLINE): signal 'dlq':"
        " its deadline must be below its TTL (31 >= 30)"
    ]


@pytest.mark.anyio
async def test_each_cache_holds_its_signal_for_its_own_ttl_and_publishes_it(tmp_path: Path) -> None:
    path = declarations(tmp_path, "    ttl: 5m\n    deadline: 40s")
    settings = load(
        {"database_url": DB, "redis_url": REDIS, "backlogs_config_file": path, "signals_ttl": "dlq=45"},
        {},
    )
    exporter = build_exporter(settings)
    try:
        caches = exporter.caches
        assert {name: (cache.ttl, cache.timeouts.deadline) for name, cache in caches.items()} == {
            "dlq": (45, 10),
            "preservation": (30, 10),
            "audit_chain": (30, 10),
            "migration_lock": (30, 10),
            "housekeeping": (30, 10),
            "outbox": (300, 40),
            "streams": (30, 10),
            "streams_payments": (30, 10),
        }
        # The scrape-timeout header bounds every signal's wait, whatever its deadline.
        assert caches["outbox"].timeouts.bounded_wait(9.5) == 9.5
        assert caches["outbox"].timeouts.bounded_wait(None) == 40.5
        assert caches["dlq"].timeouts.bounded_wait(60) == 10.5
    finally:
        await exporter.close()


@hypothesis_settings(max_examples=examples(200, 1000))
@given(st.floats(min_value=1e-3, max_value=1e6), st.sampled_from(["", "s", "m", "h"]))
def test_a_positive_duration_in_any_unit_is_read_exactly(value: float, unit: str) -> None:
    text = f"{value:f}".rstrip("0").rstrip(".") + unit
    expected = float(f"{value:f}".rstrip("0").rstrip(".")) * {"": 1, "s": 1, "m": 60, "h": 3600}[unit]
    assert math.isclose(seconds(text), expected)
    assert PerSignal()(f"dlq={text}", {}) == (("dlq", seconds(text)),)


@hypothesis_settings(max_examples=examples(200, 1000))
@given(st.text(max_size=30))
def test_any_other_text_is_refused_never_misread(text: str) -> None:
    problem = None
    try:
        value = seconds(text)
    except Refused as refused:
        problem = refused.problem
    if problem is not None:
        assert "\n" not in problem
        return
    assert value > 0
    assert math.isfinite(value)
    assert text.strip()[0].isdigit()
