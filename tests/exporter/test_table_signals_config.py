"""The printed contract as a declarations file: given back unchanged it
declares the shipped table signals again (the same registry, the same
document); edited, its `signals.dlq` and `signals.preservation` replace the
built-in declarations, `signals.audit_chain` the audit runs read and
`signals.streams` the streams signal's own pairs and dead-letter streams;
and whatever it may not change (family and label names, the migration lock,
the withheld-count reasons) is refused by check-config and serve alike, in
one line naming the key, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.backlogs import parse_declarations
from exporter.contract.tables import DLQ, PRESERVATION
from exporter.declarations import NO_DECLARATIONS, Declarations
from exporter.errors import BacklogConfigError
from exporter.tools.contract import contract_document, contract_yaml
from registry import BUILTIN
from registry.backlogs import UNDECLARED
from registry.families import DLQ_OLDEST, DLQ_PENDING, PRESERVATION_EXHAUSTED
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS
from tests.commands import refused_in_one_line, run_exporter

SETTING = "--backlogs.config-file (ORPYCAMCP_BACKLOGS_CONFIG_FILE)"
DB = "postgresql://exporter@db.invalid/platform"
PRINTED = contract_yaml(NO_DECLARATIONS)
PRESERVATION_TABLE = "    table: preservation_retry\n"
DLQ_TABLE = "    table: evento_dead_letter\n"
DLQ_ZONE = "    timezone: UTC\n  preservation:\n"  # dlq's, printed just before preservation
STREAM_PAIRS = PRINTED[PRINTED.index("    consumer_groups:\n") : PRINTED.index("    dead_letter_streams:\n")]


def edited(old: str, new: str) -> str:
    assert PRINTED.count(old) == 1, old
    return PRINTED.replace(old, new)


def test_the_printed_contract_given_back_declares_the_shipped_one() -> None:
    declared = parse_declarations(PRINTED, SETTING)
    assert declared.tables == (DLQ, PRESERVATION)
    assert declared.backlogs == ()
    assert not declared.streams
    assert declared.registry().families == BUILTIN.families
    assert contract_document(declared) == contract_document(NO_DECLARATIONS)


def test_a_replaced_value_set_is_the_families_whole_value_set() -> None:
    text = edited("    - knowledge-service\n", "    - billing\n")
    text = text.replace("        - audit_anchor\n", "")
    declared = parse_declarations(text, SETTING)
    registry = declared.registry()
    groups = ("signature-service", "workflow-service", "notification-service", "billing")
    for family in (DLQ_PENDING, DLQ_OLDEST):
        replaced = registry.family(family.name, "dlq")
        assert replaced is not None
        assert replaced.combinations == tuple((group,) for group in groups)
        assert (replaced.labels, replaced.help) == (family.labels, family.help)
    preservation = registry.family(PRESERVATION_EXHAUSTED.name, "preservation")
    assert preservation is not None
    assert len(preservation.combinations) == 6 * 7
    assert ("audit_anchor", "sealing") not in preservation.combinations
    # Printed again, the document states what the file declares.
    assert contract_document(declared)["signals"]["dlq"]["groups"] == list(groups)
    assert contract_document(Declarations(tables=declared.tables)) == contract_document(declared)


def test_check_config_says_what_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "contract.yml"
    path.write_text(edited("      status: exhausted\n", "      status: agotado\n"))
    done = run_exporter("check-config", "--database.url", DB, "--backlogs.config-file", str(path))
    assert done.returncode == 0, done.stderr
    assert "built-in declarations replaced: dlq, preservation" in done.stdout


def test_a_built_in_value_set_may_opt_in_to_a_catch_all() -> None:
    text = edited("    - knowledge-service\n", "    - knowledge-service\n    group_catch_all: other\n")
    text = text.replace("        - transfer\n", "        - transfer\n        catch_all: unlisted\n")
    declared = parse_declarations(text, SETTING)
    registry = declared.registry()
    dlq = registry.family(DLQ_PENDING.name, "dlq")
    assert dlq is not None
    assert dlq.combinations[-1] == ("other",)
    preservation = registry.family(PRESERVATION_EXHAUSTED.name, "preservation")
    assert preservation is not None
    assert len(preservation.combinations) == 7 * 8
    assert [(f.signal, f.combinations) for f in registry.families if f.name == UNDECLARED] == [
        ("dlq", (("dlq", "origin_group"),)),
        ("preservation", (("preservation", "phase"),)),
    ]
    # Printed again, the document is the file: the opt-in is part of the contract.
    assert contract_yaml(declared) == text
    # Without it, no companion family at all.
    assert not [f for f in parse_declarations(PRINTED, SETTING).registry().families if f.name == UNDECLARED]


def test_audit_runs_and_the_streams_pairs_replaced_are_the_signals_whole_contract(tmp_path: Path) -> None:
    text = edited("    table: public.audit_chain_runs\n", "    table: auditoria.verificaciones\n")
    text = text.replace("      breaks: breaks\n", "      breaks: rupturas\n")
    text = text.replace("      orpycamcp.workflow.events:\n      - notification-service\n", "")
    text = text.replace("    - orpycamcp.notification.deadletter\n", "")
    declared = parse_declarations(text, SETTING)
    assert declared.audit is not None
    assert declared.audit.table == ("auditoria", "verificaciones")
    assert dict(declared.audit.columns)["breaks"] == "rupturas"
    assert '"rupturas" AS breaks' in declared.audit.query().sql
    registry = declared.registry()
    pending = registry.family("orpycamcp_stream_pending_messages", "streams")
    dead = registry.family("orpycamcp_deadletter_stream_entries", "streams")
    assert pending is not None
    assert dead is not None
    assert pending.combinations == STREAM_GROUPS[:-1]
    assert dead.combinations == tuple((stream,) for stream in DEADLETTER_STREAMS[:2])
    assert contract_yaml(declared) == text
    # A pair removed from the streams signal may be declared again, as its own signal.
    apart = text + "streams:\n  signals:\n    streams_workflow:\n      consumer_groups:\n"
    apart += "        orpycamcp.workflow.events: [notification-service]\n"
    assert parse_declarations(apart, SETTING).streams.signals[0].groups == (STREAM_GROUPS[-1],)
    path = tmp_path / "contract.yml"
    path.write_text(text)
    done = run_exporter("check-config", "--database.url", DB, "--backlogs.config-file", str(path))
    assert done.returncode == 0, done.stderr
    assert "built-in declarations replaced: dlq, preservation, audit_chain, streams" in done.stdout


# Each refused in one line naming the key: in process here (the reading check-config and serve share).
REFUSED = [
    (
        "        - transfer\n",
        "        - transfer\n        catch_all: ''\n",
        "signals.preservation.labels.phase.catch_all",
    ),
    (PRESERVATION_TABLE, PRESERVATION_TABLE + "    group_catch_all: other\n", "signals.preservation.group_catch_all"),
    ("      artifact:\n", "      artefact:\n", "signals.preservation.labels"),
    ("    group_by: origin_group\n", "    group_by: origin group\n", "signals.dlq.group_by"),
    ("    - knowledge-service\n", "    - signature-service\n", "signals.dlq.groups"),
    ("      status: exhausted\n", "      status: [yes]\n", "signals.preservation.pending.status"),
    (PRESERVATION_TABLE, PRESERVATION_TABLE + "    oldest: created_at\n", "signals.preservation.oldest"),
    (DLQ_ZONE, DLQ_ZONE.replace("UTC", "Europe/Atlantis"), "signals.dlq.timezone"),
    ("    source: redis\n", "    source: kafka\n", "signals.streams.source"),
    ("    - counters_disagree\n", "", "signals.streams.undelivered_unknown_reasons"),
    (STREAM_PAIRS, "    consumer_groups: {}\n", "signals.streams.consumer_groups"),
    ("    dead_letter_streams:\n", "    dead_letters:\n", "signals.streams.dead_letters"),
    ("      classid: 1330794585\n", "      classid: 1\n", "signals.migration_lock"),
    ("      verification_ok: verification_ok\n", "", "signals.audit_chain.columns"),
    ("    table: public.audit_chain_runs\n", "    table: audit_chain_runs\n", "signals.audit_chain.table"),
    ("    - finished_at\n    - id\n", "    - id\n    - id\n", "signals.audit_chain.latest"),
    ("    scope: global\n", "    scope: tenant\n", "signals.audit_chain.scope"),
    ("      scope: complete\n", "      scope: [yes]\n", "signals.audit_chain.complete.scope"),
    ("  dlq:\n", "  dead_letters:\n", "signals.dead_letters"),
    (DLQ_TABLE, "    help: x\n" + DLQ_TABLE, "signals.dlq.help"),
]


@pytest.mark.parametrize(("old", "new", "key"), REFUSED)
def test_a_part_out_of_contract_is_refused_naming_the_key(old: str, new: str, key: str) -> None:
    with pytest.raises(BacklogConfigError) as caught:
        parse_declarations(edited(old, new), SETTING)
    assert f"key {key!r}" in str(caught.value)
    assert "\n" not in str(caught.value)


# The same, by check-config and serve alike, each a process: one file per kind of part.
@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        (
            "    - knowledge-service\n",
            "    - knowledge-service\n    group_catch_all: knowledge-service\n",
            "signals.dlq.group_catch_all",
        ),
        (DLQ_TABLE, "", "signals.dlq.table"),
        ("      breaks: breaks\n", "      breaks: n breaks\n", "signals.audit_chain.columns.breaks"),
        ("      orpycamcp.workflow.events:\n", "      7:\n", "signals.streams.consumer_groups"),
        ("  schema: tenant_<slug>\n", "  schema: <slug>\n", "tenants.schema"),
    ],
)
def test_a_file_that_changes_what_is_fixed_is_refused_naming_the_key(
    tmp_path: Path, old: str, new: str, key: str
) -> None:
    path = tmp_path / "contract.yml"
    path.write_text(edited(old, new))
    lines = {
        command: refused_in_one_line(command, "--database.url", DB, "--backlogs.config-file", str(path))
        for command in ("check-config", "serve")
    }
    assert lines["check-config"] == lines["serve"]
    assert f"key {key!r}" in lines["serve"], lines["serve"]
