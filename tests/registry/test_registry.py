from __future__ import annotations

from dataclasses import replace

import pytest

from registry import BUILTIN, BY_NAME, FAMILIES, META, SIGNALS, Family, RegistryError, extended, families_of
from registry.backlogs import BacklogShape, backlog_families, oldest_part, pending_part
from registry.families import DATABASE_IDENTITY, PROCESS_FAMILIES
from registry.model import FORBIDDEN_LABELS, ValueRule, check_unique, product
from registry.values import STREAM_GROUPS


def test_every_family_is_a_prefixed_gauge_with_help() -> None:
    for family in FAMILIES:
        # The process families keep the names every client library gives them.
        assert family.name.startswith("process_" if family in PROCESS_FAMILIES else "orpycamcp_")
        assert family.type.value == ("counter" if family.name.endswith("_total") else "gauge")
        assert family.help


def test_signals_and_their_families() -> None:
    assert SIGNALS == ("dlq", "preservation", "audit_chain", "migration_lock", "housekeeping", "streams")
    assert [f.name for f in families_of("migration_lock")] == [
        "orpycamcp_migration_lock_held",
        "orpycamcp_migration_lock_waiters",
        "orpycamcp_migration_lock_holder_session_start_timestamp_seconds",
        "orpycamcp_migration_lock_holder_session_start_unknown",
    ]
    assert [f.name for f in families_of("housekeeping")] == [
        "orpycamcp_housekeeping_dead_letter_oldest_terminal_resolved_timestamp_seconds",
        "orpycamcp_housekeeping_dead_letter_terminal_without_resolved_at",
        "orpycamcp_housekeeping_notification_dedup_oldest_processed_timestamp_seconds",
    ]
    assert [f.name for f in families_of("dlq")] == [
        "orpycamcp_dlq_pending_events",
        "orpycamcp_dlq_oldest_pending_timestamp_seconds",
    ]
    assert len(BY_NAME["orpycamcp_preservation_exhausted_artifacts"].combinations) == 49
    assert len(BY_NAME["orpycamcp_dlq_pending_events"].combinations) == 4


def test_no_family_carries_another_signals_name() -> None:
    # The suite (tests/scrapes.py's prefixes, the mixin's signalOf) and a reader
    # take orpycamcp_<signal>_* for that signal's values: a family named after
    # another signal would be taken for that signal's.
    for family in FAMILIES:
        named = [s for s in SIGNALS if family.name.startswith(f"orpycamcp_{s}_")]
        assert named in ([], [family.signal]), (family.name, family.signal)
    for signal in ("dlq", "preservation", "audit_chain", "migration_lock", "housekeeping"):
        assert all(f.name.startswith(f"orpycamcp_{signal}_") for f in families_of(signal)), signal


def test_stream_groups_are_a_closed_set_of_pairs_not_a_product() -> None:
    family = BY_NAME["orpycamcp_stream_pending_messages"]
    assert family.combinations == STREAM_GROUPS
    assert ("orpycamcp.workflow.events", "signature-service") not in family.combinations


def test_no_label_identifies_a_tenant_or_person() -> None:
    for family in FAMILIES:
        assert not set(family.labels) & FORBIDDEN_LABELS


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "bad-name", "help": "h", "signal": "s"},
        {"name": "__reserved", "help": "h", "signal": "s"},
        {"name": "ok", "help": "", "signal": "s"},
        {"name": "ok", "help": "h", "signal": "s", "labels": ("a", "a"), "combinations": (("x", "y"),)},
        {"name": "ok", "help": "h", "signal": "s", "labels": ("bad-label",), "combinations": (("x",),)},
        {"name": "ok", "help": "h", "signal": "s", "labels": ("tenant",), "combinations": (("x",),)},
        {"name": "ok", "help": "h", "signal": "s", "labels": ("a",), "combinations": (("x", "y"),)},
        {"name": "ok", "help": "h", "signal": "s", "labels": ("a",), "combinations": (("x",), ("x",))},
        {"name": "ok", "help": "h", "signal": "s", "labels": ("a",), "combinations": ()},
        {"name": "ok", "help": "h", "signal": "s", "labels": ("a",), "combinations": (("",),)},
    ],
)
def test_bad_families_fail_at_construction(kwargs: dict[str, object]) -> None:
    with pytest.raises(RegistryError):
        Family(**kwargs)  # type: ignore[arg-type]


RULE = ValueRule(pattern=r"[0-9]{1,3}", description="digits", max_length=3)


@pytest.mark.parametrize(
    "kwargs",
    [
        # A family under a value rule has one label, no listed values, and is sparse.
        {"labels": ("a", "b"), "combinations": (), "sparse": True},
        {"labels": ("a",), "combinations": (("1",),), "sparse": True},
        {"labels": ("a",), "combinations": (), "sparse": False},
        {"labels": ("tenant",), "combinations": (), "sparse": True},
    ],
)
def test_bad_rule_families_fail_at_construction(kwargs: dict[str, object]) -> None:
    with pytest.raises(RegistryError):
        Family(name="ok", help="h", signal="s", rule=RULE, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("pattern", "max_length"), [(r"[0-9]*", 3), (r"[0-9]+", 0)])
def test_a_value_rule_refuses_the_empty_value_and_bounds_the_length(pattern: str, max_length: int) -> None:
    with pytest.raises(RegistryError):
        ValueRule(pattern=pattern, description="d", max_length=max_length)


def test_a_value_rule_holds_whole_values_to_its_pattern() -> None:
    assert RULE.accepts("123")
    assert not RULE.accepts("1234")  # too long
    assert not RULE.accepts("12a")
    assert not RULE.accepts("12\n")
    assert not RULE.accepts(12)
    assert DATABASE_IDENTITY.rule is not None
    assert DATABASE_IDENTITY.rule.accepts("7715102622914101987/16384")
    assert not DATABASE_IDENTITY.rule.accepts("7715102622914101987/16384 ")
    assert not DATABASE_IDENTITY.rule.accepts("east")


def test_duplicate_family_names_fail() -> None:
    family = Family(name="x", help="h", signal="s")
    with pytest.raises(RegistryError, match="declared twice"):
        check_unique((family, family))


def test_product_is_every_combination_in_order() -> None:
    family = Family(name="x", help="h", signal="s", labels=("a", "b"), combinations=product(("1", "2"), ("y",)))
    assert family.combinations == (("1", "y"), ("2", "y"))


def test_registry_imports_nothing_from_the_exporter() -> None:
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "registry"
    for path in root.glob("*.py"):
        text = path.read_text()
        assert "import exporter" not in text, path
        assert "from exporter" not in text, path


def test_the_builtin_registry_is_the_module_constants() -> None:
    assert BUILTIN.families == FAMILIES
    assert BUILTIN.signals == SIGNALS
    assert BUILTIN.family("orpycamcp_dlq_pending_events", "dlq") is BY_NAME["orpycamcp_dlq_pending_events"]
    assert BUILTIN.family("orpycamcp_dlq_pending_events", "preservation") is None


def test_extended_registry_holds_the_declared_backlogs() -> None:
    declared = backlog_families((BacklogShape("kyc", ("face_match", "7"), True), BacklogShape("outbox", None, False)))
    registry = extended(("kyc", "outbox"), declared)
    assert registry.signals == (*SIGNALS, "kyc", "outbox")
    measured = registry.family("orpycamcp_signal_measured", META)
    assert measured is not None
    assert measured.combinations == tuple((signal,) for signal in registry.signals)
    assert [(f.name, f.signal, f.labels) for f in registry.families_of("kyc")] == [
        ("orpycamcp_backlog_pending_items", "kyc", ("backlog", "group")),
        ("orpycamcp_backlog_oldest_pending_timestamp_seconds", "kyc", ("backlog", "group")),
    ]
    # No oldest column: no oldest family; no group_by: the backlog label only.
    assert [(f.name, f.combinations) for f in registry.families_of("outbox")] == [
        ("orpycamcp_backlog_pending_items", (("outbox",),))
    ]
    names = [family.name for family in registry.families]
    # build_info closes the measured page; the HTTP server's and the process's families
    # follow it, per response.
    assert names[-9:] == [
        "orpycamcp_exporter_build_info",
        "orpycamcp_exporter_http_connections",
        "orpycamcp_exporter_http_connections_shed_total",
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_max_fds",
        "process_virtual_memory_bytes",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
    ]
    # The built-in registry is untouched.
    assert BUILTIN.signals == SIGNALS
    assert BY_NAME["orpycamcp_signal_measured"].combinations == tuple((s,) for s in SIGNALS)


def test_a_bad_extension_fails_when_it_is_built() -> None:
    part = pending_part("kyc", None)
    with pytest.raises(RegistryError, match="no value family"):
        extended(("kyc", "other"), (part,))
    with pytest.raises(RegistryError, match="not registered"):
        extended((), (part,))
    with pytest.raises(RegistryError, match="declared twice"):
        extended(("kyc",), (part, part))
    with pytest.raises(RegistryError, match="repeat"):
        extended(("kyc", "kyc"), (part,))
    with pytest.raises(RegistryError, match="declared together"):
        extended(("kyc", "b"), (part, oldest_part("kyc", None), pending_part("b", None)))
    with pytest.raises(RegistryError, match="share help"):
        extended(("kyc", "b"), (part, replace(pending_part("b", None), help="Other.")))
    with pytest.raises(RegistryError, match="backlog name"):
        pending_part("Bad-Name", None)
    with pytest.raises(RegistryError, match="label value"):
        pending_part("kyc", ("",))
