"""The catch-all value of a declared backlog's value set (`group_catch_all`,
`states.catch_all`): parsed to one more declared value and its companion
family, and every problem refused at start, naming the backlog and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from devkit.backlogs import example_backlogs, without
from devkit.catalog import catalog_of
from exporter.backlogs import parse_declarations
from exporter.declarations import States
from exporter.errors import BacklogConfigError
from tests.commands import refused_in_one_line

DB = "postgresql://u:p@h/db"
SETTING = "--backlogs.config-file (ORPYCAMCP_BACKLOGS_CONFIG_FILE)"
GROUPS = "    groups: [face_match, ocr_extraction, liveness_detection, doc_processing]\n"
STATES = "      values: [pending, reprocessed, discarded]\n"

# The example's KYC backlog with both value sets opted in.
GOOD = (
    without(example_backlogs("kyc_dead_letters"), "arrivals")
    .replace(GROUPS, GROUPS + "    group_catch_all: other\n", 1)
    .replace(STATES, STATES + "      catch_all: unknown\n", 1)
)
assert "group_catch_all: other" in GOOD
assert "catch_all: unknown" in GOOD


def replaced(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


def test_the_catch_all_is_one_more_declared_value_and_has_its_companion() -> None:
    (kyc,) = parse_declarations(GOOD, SETTING).backlogs
    assert kyc.group_catch_all == "other"
    assert kyc.states == States("status", ("pending", "reprocessed", "discarded"), "unknown")
    registry = catalog_of((kyc,)).registry
    pending = registry.family("orpycamcp_backlog_pending_items", "kyc_dead_letters")
    items = registry.family("orpycamcp_backlog_items", "kyc_dead_letters")
    undeclared = registry.family("orpycamcp_backlog_undeclared_values", "kyc_dead_letters")
    assert pending is not None
    assert items is not None
    assert undeclared is not None
    tasks = ("face_match", "ocr_extraction", "liveness_detection", "doc_processing", "other")
    assert [group for _, group in pending.combinations] == list(tasks)
    assert {(group, state) for _, group, state in items.combinations} == {
        (group, state) for group in tasks for state in ("pending", "reprocessed", "discarded", "unknown")
    }
    assert undeclared.labels == ("backlog", "value_set")
    assert undeclared.combinations == (("kyc_dead_letters", "group"), ("kyc_dead_letters", "state"))


def test_without_the_opt_in_nothing_changes() -> None:
    text = replaced("    group_catch_all: other\n", "").replace("      catch_all: unknown\n", "")
    (kyc,) = parse_declarations(text, SETTING).backlogs
    assert kyc.group_catch_all is None
    assert kyc.states is not None
    assert kyc.states.catch_all is None
    registry = catalog_of((kyc,)).registry
    assert registry.family("orpycamcp_backlog_undeclared_values", "kyc_dead_letters") is None
    pending = registry.family("orpycamcp_backlog_pending_items", "kyc_dead_letters")
    assert pending is not None
    assert len(pending.combinations) == 4


def test_an_integer_catch_all_is_its_text() -> None:
    (kyc,) = parse_declarations(replaced("group_catch_all: other", "group_catch_all: -1"), SETTING).backlogs
    assert kyc.group_catch_all == "-1"


BAD: list[tuple[str, str, str, str]] = [
    (
        "group-is-declared",
        replaced("group_catch_all: other", "group_catch_all: face_match"),
        "group_catch_all",
        "is a declared value",
    ),
    (
        "state-is-declared",
        replaced("catch_all: unknown", "catch_all: pending"),
        "states.catch_all",
        "is a declared value",
    ),
    ("group-bool", replaced("group_catch_all: other", "group_catch_all: yes"), "group_catch_all", "quote it"),
    ("group-list", replaced("group_catch_all: other", "group_catch_all: [other]"), "group_catch_all", "quote it"),
    ("group-empty", replaced("group_catch_all: other", "group_catch_all: ''"), "group_catch_all", "non-empty"),
    ("state-control", replaced("catch_all: unknown", 'catch_all: "un\\tknown"'), "states.catch_all", "control"),
    (
        "group-without-group-by",
        replaced("    group_by: task_name\n" + GROUPS, ""),
        "group_catch_all",
        "needs group_by and groups",
    ),
]


@pytest.mark.parametrize(("text", "key", "problem"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_every_problem_names_the_backlog_and_the_key(text: str, key: str, problem: str) -> None:
    with pytest.raises(BacklogConfigError) as caught:
        parse_declarations(text, SETTING)
    assert (caught.value.backlog, caught.value.key) == ("kyc_dead_letters", key)
    assert problem in str(caught.value)


def test_check_config_refuses_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(replaced("group_catch_all: other", "group_catch_all: ocr_extraction"))
    line = refused_in_one_line("check-config", "--database-url", DB, "--backlogs.config-file", str(path))
    assert "backlog 'kyc_dead_letters', key 'group_catch_all': 'ocr_extraction' is a declared value" in line
