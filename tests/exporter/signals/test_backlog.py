"""Declared backlogs against the real PostgreSQL: exact values in both scopes,
and every way a backlog becomes unmeasured instead of wrong."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from devkit.backlogs import pending_only
from exporter.backlogs import parse_declarations
from exporter.errors import ContractViolation, InvalidTenantSlug, MeasurementError, SourceNotConfigured
from exporter.exporter import Exporter
from exporter.signals import backlog
from exporter.sources import Sources
from tests.platform import Platform, at
from tests.scrapes import Page, make_exporter, scrape

pytestmark = pytest.mark.anyio

PENDING = "orpycamcp_backlog_pending_items"
OLDEST = "orpycamcp_backlog_oldest_pending_timestamp_seconds"
LAST_SUCCESS = "orpycamcp_signal_last_success_timestamp_seconds"

KYC = pending_only("kyc_dead_letters")
[KYC_BACKLOG] = parse_declarations(KYC, "backlogs_config_file").backlogs


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "backlogs.yml"
    path.write_text(text)
    return str(path)


def backlog_series(page: Page, backlog: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (family, labels): value
        for (family, labels), value in page.values.items()
        if family in (PENDING, OLDEST) and ("backlog", backlog) in labels
    }


async def refresh(exporter: Exporter) -> Page:
    for cache in exporter.caches.values():
        cache.ttl = 0
    return await scrape(exporter)


async def refusal(exporter: Exporter, backlog: str) -> str:
    """The words of the error measuring `backlog` raises, as logged."""
    with pytest.raises(MeasurementError) as raised:
        await exporter.caches[backlog].signal.measure(exporter.sources)
    return str(raised.value)


async def test_tenant_scope_sums_every_active_tenant_exactly(tenants: Platform, tmp_path: Path) -> None:
    add = tenants.add_dead_letter_task
    await add("acme", "face_match", "pending", at("2026-11-01 10:00:00"))
    await add("acme", "face_match", "pending", at("2026-11-02 10:00:00"))
    await add("acme", "ocr_extraction", "reprocessed", at("2026-10-01 10:00:00"))
    await add("acme", "doc_processing", "discarded", at("2026-10-01 10:00:00"))
    await add("globex", "face_match", "pending", at("2026-10-31 09:00:00"))
    await add("globex", "liveness_detection", "pending", at("2026-11-03 00:00:00"))
    await add("initech", "ocr_extraction", "pending", at("2026-01-01 00:00:00"))  # provisioning: skipped
    exporter = make_exporter(tenants.exporter_url, backlogs_config_file=write(tmp_path, KYC))
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.measured("kyc_dead_letters") == 1
    assert page.measured("dlq") == 1  # the built-in signals are measured beside it
    assert backlog_series(page, "kyc_dead_letters") == {
        (PENDING, (("backlog", "kyc_dead_letters"), ("group", "face_match"))): 3,
        (PENDING, (("backlog", "kyc_dead_letters"), ("group", "ocr_extraction"))): 0,
        (PENDING, (("backlog", "kyc_dead_letters"), ("group", "liveness_detection"))): 1,
        (PENDING, (("backlog", "kyc_dead_letters"), ("group", "doc_processing"))): 0,
        (OLDEST, (("backlog", "kyc_dead_letters"), ("group", "face_match"))): at("2026-10-31 09:00:00").timestamp(),
        (OLDEST, (("backlog", "kyc_dead_letters"), ("group", "liveness_detection"))): at(
            "2026-11-03 00:00:00"
        ).timestamp(),
    }


@pytest.mark.parametrize("oldest_in", ["acme", "globex"])  # the first batch, the last one
async def test_the_oldest_is_kept_across_batches_wherever_it_lies(
    tenants: Platform, tmp_path: Path, oldest_in: str
) -> None:
    newer = {"acme": "2026-11-02 10:00:00", "globex": "2026-11-01 10:00:00"}
    for slug, created in newer.items():
        await tenants.add_dead_letter_task(slug, "face_match", "pending", at(created))
    await tenants.add_dead_letter_task(oldest_in, "face_match", "pending", at("2026-10-15 00:00:00"))
    # One tenant per statement: each tenant's rows come back from a batch of their own.
    exporter = make_exporter(tenants.exporter_url, backlogs_config_file=write(tmp_path, KYC), database_batch_size="1")
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    labels = (("backlog", "kyc_dead_letters"), ("group", "face_match"))
    assert backlog_series(page, "kyc_dead_letters")[(PENDING, labels)] == 3
    assert backlog_series(page, "kyc_dead_letters")[(OLDEST, labels)] == at("2026-10-15 00:00:00").timestamp()


OUTBOX = pending_only("outbox")


async def make_outbox(platform: Platform, created_type: str = "timestamptz") -> None:
    await platform.execute(
        f"CREATE TABLE public.outbox (id bigserial PRIMARY KEY, partition int, status text NOT NULL,"
        f" kind text NOT NULL DEFAULT 'event', created_at {created_type})"
    )
    await platform.execute("GRANT SELECT ON public.outbox TO orpycamcp_exporter")


async def add_outbox(platform: Platform, partition: int | None, status: str, created: str, kind: str = "event") -> None:
    await platform.execute(
        "INSERT INTO public.outbox (partition, status, kind, created_at) VALUES ($1, $2, $3, $4)",
        partition,
        status,
        kind,
        at(created),
    )


async def test_global_scope_with_a_not_predicate_and_an_integer_group_column(
    platform: Platform, tmp_path: Path
) -> None:
    await make_outbox(platform)
    await add_outbox(platform, 0, "NEW", "2026-11-01 00:00:00")
    await add_outbox(platform, 0, "FAILED", "2026-10-30 00:00:00")
    await add_outbox(platform, 0, "PROCESSED", "2026-01-01 00:00:00")
    await add_outbox(platform, 3, "NEW", "2026-11-02 12:00:00")
    await add_outbox(platform, 2, "PROCESSED", "2026-01-01 00:00:00")
    exporter = make_exporter(platform.exporter_url, signals="outbox", backlogs_config_file=write(tmp_path, OUTBOX))
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.measured("outbox") == 1
    assert page.family(PENDING) == {
        (("backlog", "outbox"), ("group", "0")): 2,
        (("backlog", "outbox"), ("group", "1")): 0,
        (("backlog", "outbox"), ("group", "2")): 0,
        (("backlog", "outbox"), ("group", "3")): 1,
    }
    assert page.family(OLDEST) == {
        (("backlog", "outbox"), ("group", "0")): at("2026-10-30 00:00:00").timestamp(),
        (("backlog", "outbox"), ("group", "3")): at("2026-11-02 12:00:00").timestamp(),
    }
    assert page.measured("dlq") is None  # not enabled


async def test_list_predicates_on_two_columns_without_group_or_oldest(platform: Platform, tmp_path: Path) -> None:
    await make_outbox(platform)
    await add_outbox(platform, 0, "NEW", "2026-11-01 00:00:00")
    await add_outbox(platform, 1, "FAILED", "2026-11-01 00:00:00")
    await add_outbox(platform, 1, "FAILED", "2026-11-01 00:00:00", kind="audit")
    await add_outbox(platform, None, "RETRY", "2026-11-01 00:00:00")  # NULL: only a grouped backlog refuses it
    await add_outbox(platform, 2, "PROCESSED", "2026-11-01 00:00:00")
    config = """
backlogs:
  stuck_events:
    help: Events stuck before processing.
    scope: global
    table: public.outbox
    pending:
      status: [NEW, FAILED, RETRY]
      kind: {not: [audit, heartbeat]}
"""
    exporter = make_exporter(
        platform.exporter_url, signals="stuck_events", backlogs_config_file=write(tmp_path, config)
    )
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.measured("stuck_events") == 1
    assert page.family(PENDING) == {(("backlog", "stuck_events"),): 3}
    assert page.family(OLDEST) == {}  # no oldest column declared


async def test_a_timestamp_without_time_zone_is_read_as_utc(platform: Platform, tmp_path: Path) -> None:
    await make_outbox(platform, created_type="timestamp")
    await platform.execute(
        "INSERT INTO public.outbox (partition, status, created_at) VALUES (1, 'NEW', $1)",
        at("2026-11-01 08:30:00").replace(tzinfo=None),
    )
    exporter = make_exporter(platform.exporter_url, signals="outbox", backlogs_config_file=write(tmp_path, OUTBOX))
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.get(OLDEST, backlog="outbox", group="1") == at("2026-11-01 08:30:00").timestamp()


async def assert_unmeasured_after_success(
    platform: Platform, exporter: Exporter, backlog: str, break_it: str, *args: object
) -> Page:
    """Measured once, then broken: unmeasured, no value series, last success kept, dlq untouched."""
    first = await scrape(exporter)
    assert first.measured(backlog) == 1
    success = first.get(LAST_SUCCESS, signal=backlog)
    assert success is not None
    await platform.execute(break_it, *args)
    page = await refresh(exporter)
    assert page.measured(backlog) == 0
    assert backlog_series(page, backlog) == {}
    assert page.get(LAST_SUCCESS, signal=backlog) == success
    assert page.measured("dlq") == 1
    return page


async def test_a_group_value_outside_the_declared_groups_makes_the_backlog_unmeasured(
    tenants: Platform, tmp_path: Path
) -> None:
    await tenants.add_dead_letter_task("acme", "face_match", "pending", at("2026-11-01 10:00:00"))
    exporter = make_exporter(tenants.exporter_url, backlogs_config_file=write(tmp_path, KYC))
    try:
        await assert_unmeasured_after_success(
            tenants,
            exporter,
            "kyc_dead_letters",
            "INSERT INTO tenant_globex.dead_letter_queue (task_name, status, created_at) VALUES ($1, 'pending', now())",
            "billing_sync",
        )
        outcome = exporter.caches["kyc_dead_letters"].last
        assert outcome is not None
        assert outcome.failure is not None
        assert outcome.failure.reason == "unregistered_value"
        assert "billing_sync" in outcome.failure.detail
    finally:
        await exporter.close()


async def test_a_missing_table_in_one_tenant_makes_the_backlog_unmeasured(tenants: Platform, tmp_path: Path) -> None:
    exporter = make_exporter(tenants.exporter_url, backlogs_config_file=write(tmp_path, KYC))
    try:
        await assert_unmeasured_after_success(
            tenants, exporter, "kyc_dead_letters", "DROP TABLE tenant_globex.dead_letter_queue"
        )
        outcome = exporter.caches["kyc_dead_letters"].last
        assert outcome is not None
        assert outcome.failure is not None
        assert outcome.failure.reason == "missing_table"
    finally:
        await exporter.close()


@pytest.mark.parametrize(
    ("task_name", "created_at", "where"),
    [(None, "now()", "task_name"), ("face_match", "NULL", "created_at")],
    ids=["null-group", "null-timestamp"],
)
async def test_a_null_in_the_group_or_timestamp_column_makes_the_backlog_unmeasured(
    tenants: Platform, tmp_path: Path, task_name: str | None, created_at: str, where: str
) -> None:
    exporter = make_exporter(tenants.exporter_url, backlogs_config_file=write(tmp_path, KYC))
    try:
        await assert_unmeasured_after_success(
            tenants,
            exporter,
            "kyc_dead_letters",
            "INSERT INTO tenant_acme.dead_letter_queue (task_name, status, created_at)"
            f" VALUES ($1::text, 'pending', {created_at})",
            task_name,
        )
        outcome = exporter.caches["kyc_dead_letters"].last
        assert outcome is not None
        assert outcome.failure is not None
        assert outcome.failure.reason == "contract_violation"
        assert f"dead_letter_queue.{where}: NULL" in outcome.failure.detail
    finally:
        await exporter.close()


async def test_a_value_of_the_wrong_type_for_its_column_is_a_contract_violation(
    platform: Platform, tmp_path: Path
) -> None:
    await make_outbox(platform)
    config = OUTBOX.replace("status: {not: [PROCESSED]}", "partition: [zero, 1]")
    exporter = make_exporter(platform.exporter_url, signals="outbox", backlogs_config_file=write(tmp_path, config))
    try:
        page = await scrape(exporter)
        assert page.measured("outbox") == 0
        outcome = exporter.caches["outbox"].last
        assert outcome is not None
        assert outcome.failure is not None
        assert outcome.failure.reason == "contract_violation"
    finally:
        await exporter.close()


async def test_names_that_need_quoting_are_quoted(platform: Platform, tmp_path: Path) -> None:
    """A table and columns named by keywords and mixed case: read only when quoted."""
    await platform.add_tenant("acme")
    await platform.execute(
        'CREATE TABLE tenant_acme."Order" ("select" text NOT NULL, "Group" int NOT NULL, "from" timestamptz NOT NULL)'
    )
    await platform.execute('GRANT SELECT ON tenant_acme."Order" TO orpycamcp_exporter')
    await platform.execute(
        "INSERT INTO tenant_acme.\"Order\" VALUES ('open', 7, $1), ('open', 7, $2), ('closed', 7, $1)",
        at("2026-11-01 00:00:00"),
        at("2026-11-05 00:00:00"),
    )
    config = """
backlogs:
  orders:
    help: Open orders.
    scope: tenant
    table: Order
    pending:
      select: open
    group_by: Group
    groups: [7, 8]
    oldest: from
"""
    exporter = make_exporter(platform.exporter_url, signals="orders", backlogs_config_file=write(tmp_path, config))
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.family(PENDING) == {
        (("backlog", "orders"), ("group", "7")): 2,
        (("backlog", "orders"), ("group", "8")): 0,
    }
    assert page.get(OLDEST, backlog="orders", group="7") == at("2026-11-01 00:00:00").timestamp()


async def test_a_value_is_bound_never_pasted(platform: Platform, tmp_path: Path) -> None:
    """A pending value that would be an injection if pasted into the SQL is a plain string."""
    await make_outbox(platform)
    hostile = "x'); DROP TABLE public.outbox; --"
    await add_outbox(platform, 1, hostile, "2026-11-01 00:00:00")
    config = OUTBOX.replace("status: {not: [PROCESSED]}", f'status: "{hostile}"')
    exporter = make_exporter(platform.exporter_url, signals="outbox", backlogs_config_file=write(tmp_path, config))
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.get(PENDING, backlog="outbox", group="1") == 1
    assert (await platform.fetch("SELECT count(*) AS n FROM public.outbox"))[0]["n"] == 1


async def test_signals_accepts_backlog_names(tenants: Platform, tmp_path: Path) -> None:
    exporter = make_exporter(
        tenants.exporter_url, signals="kyc_dead_letters", backlogs_config_file=write(tmp_path, KYC)
    )
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert exporter.signals == ("kyc_dead_letters",)
    assert page.measured("kyc_dead_letters") == 1
    assert page.measured("dlq") is None
    # A backlog reads PostgreSQL: the database it read is identified beside it.
    assert len(page.family("orpycamcp_database_identity_info")) == 1


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ("(NULL, 'pending', now())", "dead_letter_queue.task_name: NULL in a row read"),
        ("('face_match', 'pending', NULL)", "dead_letter_queue.created_at: NULL in a pending row"),
        ("('face_match', 'pending', 'infinity')", "dead_letter_queue.created_at: infinite timestamp"),
        ("('face_match', 'pending', '-infinity')", "dead_letter_queue.created_at: infinite timestamp"),
    ],
    ids=["null-group", "null-timestamp", "infinity", "minus-infinity"],
)
async def test_a_contract_violation_names_the_backlog_the_column_and_the_problem(
    tenants: Platform, tmp_path: Path, row: str, words: str
) -> None:
    await tenants.execute("ALTER TABLE tenant_acme.dead_letter_queue ALTER COLUMN task_name DROP NOT NULL")
    await tenants.execute(f"INSERT INTO tenant_acme.dead_letter_queue (task_name, status, created_at) VALUES {row}")
    exporter = make_exporter(
        tenants.exporter_url, signals="kyc_dead_letters", backlogs_config_file=write(tmp_path, KYC)
    )
    try:
        assert await refusal(exporter, "kyc_dead_letters") == f"signal kyc_dead_letters: {words}"
    finally:
        await exporter.close()


async def test_a_value_of_the_wrong_type_is_named_as_the_pending_rule_in_the_drivers_words(
    platform: Platform, tmp_path: Path
) -> None:
    await make_outbox(platform)
    config = OUTBOX.replace("status: {not: [PROCESSED]}", "partition: [zero, 1]")
    exporter = make_exporter(platform.exporter_url, signals="outbox", backlogs_config_file=write(tmp_path, config))
    try:
        words = await refusal(exporter, "outbox")
    finally:
        await exporter.close()
    prefix = "signal outbox: pending: a value does not fit its column: "  # the driver's words after it
    assert (
        words
        == prefix + "invalid input for query argument $1: 'zero' ('str' object cannot be interpreted as an integer)"
    )


async def test_without_a_database_the_backlog_names_itself_unconfigured() -> None:
    with pytest.raises(SourceNotConfigured) as raised:
        await backlog.measure(KYC_BACKLOG, Sources())
    assert raised.value.signal == "kyc_dead_letters"


async def test_a_tenant_that_cannot_name_a_schema_is_refused_for_the_backlog(tenants: Platform, tmp_path: Path) -> None:
    await tenants.execute("INSERT INTO public.tenants (slug) VALUES ($1)", "x" * 80)
    exporter = make_exporter(
        tenants.exporter_url, signals="kyc_dead_letters", backlogs_config_file=write(tmp_path, KYC)
    )
    try:
        with pytest.raises(InvalidTenantSlug) as raised:
            await exporter.caches["kyc_dead_letters"].signal.measure(exporter.sources)
    finally:
        await exporter.close()
    assert raised.value.signal == "kyc_dead_letters"


@pytest.mark.parametrize(
    ("value", "problem"),
    [(datetime(2026, 11, 1), "datetime"), ("2026-11-01", "str"), (None, "NoneType")],
    ids=["naive", "text", "null"],
)
def test_an_oldest_value_not_read_as_an_instant_is_a_contract_violation(value: object, problem: str) -> None:
    # The statement reads every time column as a timestamptz: a driver giving anything else is refused.
    with pytest.raises(ContractViolation) as raised:
        backlog.oldest_seconds(KYC_BACKLOG, value)
    assert str(raised.value) == (
        f"signal kyc_dead_letters: dead_letter_queue.created_at: not read as an instant ({problem})"
    )
