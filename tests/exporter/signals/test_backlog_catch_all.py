"""Values nobody declared, summed under a declared catch-all value (opt-in),
a declared backlog's and a built-in table signal's, against the real
PostgreSQL; and, as a property over any undeclared values, no raw value ever
reaches the page."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import asyncpg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devkit.backlogs import example_backlogs, pending_only, without
from devkit.catalog import catalog_of
from exporter.backlogs import parse_declarations
from exporter.declarations import NO_DECLARATIONS
from exporter.exposition.assemble import assemble
from exporter.exposition.text import render
from exporter.outcomes import Outcome
from exporter.signals.backlog import Counts
from exporter.tools.contract import contract_yaml
from registry.families import DLQ_OLDEST, DLQ_PENDING, PRESERVATION_EXHAUSTED
from registry.values import ORIGIN_GROUPS
from tests.completion import complete
from tests.hypotheses import examples
from tests.platform import Platform, at
from tests.scrapes import parse, scrape_once

pytestmark = pytest.mark.anyio

PENDING = "orpycamcp_backlog_pending_items"
OLDEST = "orpycamcp_backlog_oldest_pending_timestamp_seconds"
ITEMS = "orpycamcp_backlog_items"
UNDECLARED = "orpycamcp_backlog_undeclared_values"
TASKS = ("face_match", "ocr_extraction", "liveness_detection", "doc_processing")
GROUPS = "    groups: [face_match, ocr_extraction, liveness_detection, doc_processing]\n"
STATES = "      values: [pending, reprocessed, discarded]\n"

KYC = pending_only("kyc_dead_letters")
OPTED_IN = KYC.replace(GROUPS, GROUPS + "    group_catch_all: other\n", 1)
assert "group_catch_all" in OPTED_IN


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "backlogs.yml"
    path.write_text(text)
    return str(path)


def group(name: str) -> tuple[tuple[str, str], ...]:
    return (("backlog", "kyc_dead_letters"), ("group", name))


async def new_task_in_two_tenants(platform: Platform) -> None:
    """A Celery task name nobody declared (billing_sync) pending in two tenants, beside a declared one."""
    await platform.add_dead_letter_task("acme", "face_match", "pending", at("2026-11-01 10:00:00"))
    await platform.add_dead_letter_task("acme", "billing_sync", "pending", at("2026-11-01 09:00:00"))
    await platform.add_dead_letter_task("globex", "billing_sync", "pending", at("2026-11-01 08:00:00"))
    await platform.add_dead_letter_task("globex", "billing_sync", "reprocessed", at("2026-11-01 07:00:00"))
    # provisioning: never read, whatever it holds
    await platform.add_dead_letter_task("initech", "never_read", "pending", at("2026-11-01 06:00:00"))


async def test_an_undeclared_task_is_summed_under_the_catch_all_with_its_companion(
    tenants: Platform, tmp_path: Path
) -> None:
    await new_task_in_two_tenants(tenants)

    page = await scrape_once(
        tenants.exporter_url, backlogs_config_file=write(tmp_path, OPTED_IN), signals="kyc_dead_letters"
    )

    assert page.measured("kyc_dead_letters") == 1
    assert page.family(PENDING) == {
        **{group(task): 0 for task in TASKS},
        group("face_match"): 1,
        group("other"): 2,
    }
    assert page.family(OLDEST) == {
        group("face_match"): at("2026-11-01 10:00:00").timestamp(),
        group("other"): at("2026-11-01 08:00:00").timestamp(),
    }
    # One distinct undeclared value, in two tenants.
    assert page.family(UNDECLARED) == {(("backlog", "kyc_dead_letters"), ("value_set", "group")): 1}
    assert b"billing_sync" not in page.raw
    assert b"never_read" not in page.raw


async def test_without_the_opt_in_the_same_rows_leave_the_backlog_unmeasured(tenants: Platform, tmp_path: Path) -> None:
    await new_task_in_two_tenants(tenants)

    page = await scrape_once(
        tenants.exporter_url, backlogs_config_file=write(tmp_path, KYC), signals="kyc_dead_letters"
    )

    assert page.measured("kyc_dead_letters") == 0
    assert page.failure_reasons("kyc_dead_letters") == {"unregistered_value"}
    assert page.family(PENDING) == {}
    assert page.family(UNDECLARED) == {}
    assert b"billing_sync" not in page.raw


async def test_states_and_groups_each_count_their_own_undeclared_values(tenants: Platform, tmp_path: Path) -> None:
    config = (
        without(example_backlogs("kyc_dead_letters"), "arrivals")
        .replace(GROUPS, GROUPS + "    group_catch_all: other\n", 1)
        .replace(STATES, STATES + "      catch_all: other\n", 1)
    )
    await new_task_in_two_tenants(tenants)
    await tenants.add_dead_letter_task("acme", "face_match", "archived", at("2026-11-01 05:00:00"))
    await tenants.add_dead_letter_task("globex", "kyc_resync", "on_hold", at("2026-11-01 05:00:00"))

    page = await scrape_once(
        tenants.exporter_url, backlogs_config_file=write(tmp_path, config), signals="kyc_dead_letters"
    )

    assert page.measured("kyc_dead_letters") == 1
    items = {(dict(labels)["group"], dict(labels)["state"]): value for labels, value in page.family(ITEMS).items()}
    assert {key: value for key, value in items.items() if value} == {
        ("face_match", "pending"): 1,
        ("face_match", "other"): 1,
        ("other", "pending"): 2,
        ("other", "reprocessed"): 1,
        ("other", "other"): 1,
    }
    assert len(items) == 5 * 4  # every (group, state) declared, the catch-alls included, zeros emitted
    assert page.family(UNDECLARED) == {
        (("backlog", "kyc_dead_letters"), ("value_set", "group")): 2,  # billing_sync, kyc_resync
        (("backlog", "kyc_dead_letters"), ("value_set", "state")): 2,  # archived, on_hold
    }
    for raw in (b"billing_sync", b"kyc_resync", b"archived", b"on_hold"):
        assert raw not in page.raw


# The property: any rows, with any group and state values (text as PostgreSQL
# holds it, or integers), read by the backlog with both value sets opted in.
PROPERTY = (
    without(example_backlogs("kyc_dead_letters"), "arrivals", "oldest", "timezone")
    .replace(GROUPS, GROUPS + "    group_catch_all: other\n", 1)
    .replace(STATES, STATES + "      catch_all: unknown\n", 1)
)
[PROPERTY_BACKLOG] = parse_declarations(PROPERTY, "backlogs_config_file").backlogs
REGISTRY = catalog_of((PROPERTY_BACKLOG,)).registry
DECLARED_GROUPS = (*TASKS, "other")
DECLARED_STATES = ("pending", "reprocessed", "discarded", "unknown")

raw_values = st.one_of(st.text(max_size=12), st.integers(), st.sampled_from(DECLARED_GROUPS + DECLARED_STATES))
rows = st.lists(st.tuples(raw_values, raw_values, st.integers(min_value=1, max_value=1000)), max_size=30)


def record(fields: Mapping[str, object]) -> asyncpg.Record:
    """A row as the statement returns it (Counts reads its fields by name)."""
    return cast("asyncpg.Record", fields)


@settings(max_examples=examples(200, 2000), deadline=None)
@given(rows)
def test_no_raw_value_ever_reaches_the_page(read: list[tuple[str | int, str | int, int]]) -> None:
    counts = Counts(PROPERTY_BACKLOG)
    for grp, state, number in read:
        pending = number if str(state) == "pending" else 0
        counts.add(record({"grp": grp, "st": state, "rows": number, "items": pending}))
    outcome = Outcome("kyc_dead_letters", complete("kyc_dead_letters", counts.samples(), REGISTRY), 0.0, 1.0)
    page = parse(render(assemble(("kyc_dead_letters",), {"kyc_dead_letters": outcome}, {}, REGISTRY)))

    shown = {
        value
        for (family, labels), _ in page.values.items()
        if family.startswith("orpycamcp_backlog")
        for _, value in labels
    }
    assert shown <= {"kyc_dead_letters", "group", "state", *DECLARED_GROUPS, *DECLARED_STATES}
    # Nothing lost: every row counted, each undeclared value under the catch-all.
    as_group = Counter({g: 0 for g in DECLARED_GROUPS[:-1]})
    as_state: Counter[str] = Counter()
    for grp, state, number in read:
        as_group[str(grp) if str(grp) in TASKS else "other"] += number
        as_state[str(state) if str(state) in DECLARED_STATES[:-1] else "unknown"] += number
    items = page.family(ITEMS)
    for name, number in as_group.items():
        assert sum(v for labels, v in items.items() if dict(labels)["group"] == name) == number
    for name, number in as_state.items():
        assert sum(v for labels, v in items.items() if dict(labels)["state"] == name) == number
    undeclared = {dict(labels)["value_set"]: value for labels, value in page.family(UNDECLARED).items()}
    assert undeclared == {
        "group": len({str(g) for g, _, _ in read} - set(TASKS)),
        "state": len({str(s) for _, s, _ in read} - set(DECLARED_STATES[:-1])),
    }


# The built-in table signals opt in the same way, from the printed contract edited:
# dlq's origin_group set and preservation's artifact set, each with its own catch-all.
BUILTINS_OPTED_IN = (
    contract_yaml(NO_DECLARATIONS)
    .replace("    - knowledge-service\n", "    - knowledge-service\n    group_catch_all: other\n", 1)
    .replace("        - audit_anchor\n", "        - audit_anchor\n        catch_all: unlisted\n", 1)
)
assert "group_catch_all: other" in BUILTINS_OPTED_IN
assert "catch_all: unlisted" in BUILTINS_OPTED_IN


def undeclared(signal: str, value_set: str) -> tuple[tuple[str, str], ...]:
    return (("backlog", signal), ("value_set", value_set))


async def test_the_built_in_value_sets_opt_in_to_a_catch_all_with_its_companion(
    tenants: Platform, tmp_path: Path
) -> None:
    """A fifth service's dead letters (billing, in two tenants) and a new artifact (firma): summed
    under the declared catch-alls, the companion counting them, the raw values never shown."""
    await tenants.add_dead_letter("acme", "e1", "billing", "pending", at("2026-11-01 09:00:00"))
    await tenants.add_dead_letter("globex", "e2", "billing", "pending", at("2026-11-01 08:00:00"))
    await tenants.add_dead_letter("globex", "e3", "ledger", "resolved", at("2026-11-01 07:00:00"))  # not pending
    await tenants.add_dead_letter("acme", "e4", "workflow-service", "pending", at("2026-11-01 10:00:00"))
    await tenants.add_retry("acme", "a1", "firma", "sealing", "exhausted")
    await tenants.add_retry("globex", "a2", "document", "fixity", "exhausted")

    page = await scrape_once(
        tenants.exporter_url, backlogs_config_file=write(tmp_path, BUILTINS_OPTED_IN), signals="dlq,preservation"
    )

    assert page.measured("dlq") == page.measured("preservation") == 1
    pending = {dict(labels)["origin_group"]: value for labels, value in page.family(DLQ_PENDING.name).items()}
    assert pending == {**dict.fromkeys(ORIGIN_GROUPS, 0), "workflow-service": 1, "other": 2}
    oldest = page.family(DLQ_OLDEST.name)
    assert oldest[(("origin_group", "other"),)] == at("2026-11-01 08:00:00").timestamp()
    exhausted = page.family(PRESERVATION_EXHAUSTED.name)
    assert len(exhausted) == 8 * 7  # the catch-all is one more declared artifact, every phase
    assert {labels: value for labels, value in exhausted.items() if value} == {
        (("artifact", "unlisted"), ("phase", "sealing")): 1,
        (("artifact", "document"), ("phase", "fixity")): 1,
    }
    # Only the sets declared with a catch-all have a companion; ledger is not pending: not met.
    assert page.family(UNDECLARED) == {undeclared("dlq", "origin_group"): 1, undeclared("preservation", "artifact"): 1}
    for raw in (b"billing", b"ledger", b"firma"):
        assert raw not in page.raw


async def test_without_the_opt_in_the_built_in_signal_stays_unmeasured(tenants: Platform) -> None:
    await tenants.add_dead_letter("acme", "e1", "billing", "pending", at("2026-11-01 09:00:00"))

    page = await scrape_once(tenants.exporter_url, signals="dlq,preservation")

    assert page.measured("dlq") == 0
    assert page.failure_reasons("dlq") == {"unregistered_value"}
    assert page.measured("preservation") == 1
    assert page.family(DLQ_PENDING.name) == page.family(UNDECLARED) == {}
