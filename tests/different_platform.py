"""A platform whose tables differ from the shipped contract (issue #36): its
preservation table has another name, another status word and another artifact
set, and a fifth service dead-letters under a new origin_group; and the
printed contract edited where it differs, as an operator would."""

from __future__ import annotations

from tests.commands import run_exporter
from tests.platform import Platform, at

ARTIFACTS = ("expediente", "firma", "sello")  # replaces the shipped seven
PHASES = ("reconcile", "renewal", "packaging", "sealing", "fixity", "replication", "transfer")
ORIGIN_GROUPS = ("signature-service", "workflow-service", "notification-service", "knowledge-service", "billing")

# The platform as it is: in every tenant, preservacion_reintento and its estado column.
DIFFERENT_PLATFORM = """
ALTER TABLE {schema}.preservation_retry RENAME TO preservacion_reintento;
ALTER TABLE {schema}.preservacion_reintento RENAME COLUMN status TO estado;
ALTER TABLE {schema}.preservacion_reintento DROP CONSTRAINT preservation_retry_status_check;
"""


def edited_contract() -> str:
    """`orpycamcp-exporter contract`, edited where the platform differs, as an operator would."""
    done = run_exporter("contract")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    edits = {
        "    table: preservation_retry\n    pending:\n      status: exhausted\n": (
            "    table: preservacion_reintento\n    pending:\n      estado: reintento_agotado\n"
        ),
        "    - knowledge-service\n": "    - knowledge-service\n    - billing\n",
        "        values:\n        - document\n        - attachment\n        - signature\n        - timestamp\n"
        "        - electronic_index\n        - aip_package\n        - audit_anchor\n": (
            "        values:\n" + "".join(f"        - {artifact}\n" for artifact in ARTIFACTS)
        ),
    }
    for old, new in edits.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


async def different_platform(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_tenant("globex", status="suspended")
    await platform.add_tenant("initech", provisioning_status="provisioning")
    for slug in ("acme", "globex", "initech"):
        await platform.execute(DIFFERENT_PLATFORM.format(schema=f'"tenant_{slug}"'))
        for number, (artifact, phase, estado) in enumerate(
            [
                ("expediente", "sealing", "reintento_agotado"),
                ("firma", "fixity", "reintento_agotado"),
                ("firma", "fixity", "reintentando"),
                ("sello", "transfer", "reintento_agotado"),
            ]
        ):
            await platform.execute(
                f'INSERT INTO "tenant_{slug}".preservacion_reintento (artifact_id, artifact, phase, estado, attempts)'
                " VALUES ($1, $2, $3, $4, 3)",
                f"{slug}-{number}",
                artifact,
                phase,
                estado,
            )
    await platform.add_dead_letter("acme", "e1", "billing", "pending", at("2026-11-01 10:00:00"))
    await platform.add_dead_letter("acme", "e2", "signature-service", "pending", at("2026-11-02 10:00:00"))
    await platform.add_dead_letter("globex", "e1", "billing", "pending", at("2026-10-30 08:00:00"))
    await platform.add_dead_letter("globex", "e2", "billing", "resolved", at("2026-10-01 08:00:00"))
    await platform.add_dead_letter("initech", "e1", "billing", "pending", at("2026-01-01 00:00:00"))
