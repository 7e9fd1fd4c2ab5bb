from __future__ import annotations

import pytest

from registry import BY_NAME, FAMILIES, SIGNALS, Family, RegistryError, families_of
from registry.model import FORBIDDEN_LABELS, check_unique, product
from registry.values import STREAM_GROUPS


def test_every_family_is_a_prefixed_gauge_with_help() -> None:
    for family in FAMILIES:
        assert family.name.startswith("orpycamcp_")
        assert family.type.value == ("counter" if family.name.endswith("_total") else "gauge")
        assert family.help


def test_signals_and_their_families() -> None:
    assert SIGNALS == ("dlq", "preservation", "audit_chain", "streams")
    assert [f.name for f in families_of("dlq")] == [
        "orpycamcp_dlq_pending_events",
        "orpycamcp_dlq_oldest_pending_timestamp_seconds",
    ]
    assert len(BY_NAME["orpycamcp_preservation_exhausted_artifacts"].combinations) == 49
    assert len(BY_NAME["orpycamcp_dlq_pending_events"].combinations) == 4


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
