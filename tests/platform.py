"""The platform's side of the data contract, for tests: one fresh database per
test, built from the reference DDL, with helpers that write what the platform
would write."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg

from devkit.servers import PostgresServer
from exporter.contract import sql
from exporter.tools.demo import EXPORTER_ROLE

EXPORTER_PASSWORD = "exporter-secret-9f3"
_database_numbers = itertools.count(1)


@dataclass
class Platform:
    server: PostgresServer
    database: str

    @property
    def admin_url(self) -> str:
        return self.server.url(database=self.database)

    @property
    def exporter_url(self) -> str:
        """The exporter's read-only role, as in production."""
        return self.server.url(user=EXPORTER_ROLE, password=EXPORTER_PASSWORD, database=self.database)

    async def execute(self, sql: str, *args: object) -> None:
        connection = await asyncpg.connect(self.admin_url)
        try:
            await connection.execute(sql, *args)
        finally:
            await connection.close()

    async def fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        connection = await asyncpg.connect(self.admin_url)
        try:
            rows: list[asyncpg.Record] = await connection.fetch(sql, *args)
            return rows
        finally:
            await connection.close()

    async def drop(self) -> None:
        """The database removed, sessions still in it ended: a test server stays small."""
        connection = await asyncpg.connect(self.server.url())
        try:
            await connection.execute(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")
        finally:
            await connection.close()

    async def add_tenant(self, slug: str, status: str = "active", provisioning_status: str = "active") -> None:
        await self.execute(
            "INSERT INTO public.tenants (slug, status, provisioning_status) VALUES ($1, $2, $3);",
            slug,
            status,
            provisioning_status,
        )
        await self.execute("SELECT public.orpycamcp_create_tenant_schema($1)", slug)
        await self.execute("SELECT public.orpycamcp_grant_tenant($1)", slug)

    async def add_dead_letter(
        self, slug: str, event_id: str, origin_group: str, status: str, created_at: datetime
    ) -> None:
        schema = _quote("tenant_" + slug)
        await self.execute(
            f"INSERT INTO {schema}.evento_dead_letter (event_id, tenant_slug, origin_group, status, created_at)"
            " VALUES ($1, $2, $3, $4, $5)",
            event_id,
            slug,
            origin_group,
            status,
            created_at,
        )

    async def add_retry(self, slug: str, artifact_id: str, artifact: str, phase: str, status: str) -> None:
        schema = _quote("tenant_" + slug)
        await self.execute(
            f"INSERT INTO {schema}.preservation_retry (artifact_id, artifact, phase, status, attempts)"
            " VALUES ($1, $2, $3, $4, 5)",
            artifact_id,
            artifact,
            phase,
            status,
        )

    async def add_audit_run(
        self,
        scope: str,
        finished_at: datetime,
        breaks: int | None = 0,
        declared_breaks: int | None = 0,
        verification_ok: bool | None = True,
    ) -> None:
        await self.execute(
            "INSERT INTO public.audit_chain_runs (started_at, finished_at, scope, breaks, declared_breaks,"
            " verification_ok) VALUES ($1, $2, $3, $4, $5, $6)",
            finished_at,
            finished_at,
            scope,
            breaks,
            declared_breaks,
            verification_ok,
        )

    async def add_dead_letter_queue(self, slug: str) -> None:
        """A declared backlog's table (Celery-style dead letters) in the tenant's schema, readable by the exporter."""
        table = _quote("tenant_" + slug) + ".dead_letter_queue"
        await self.execute(
            f"CREATE TABLE {table} (id bigserial PRIMARY KEY, task_name text, status text NOT NULL,"
            " created_at timestamptz)"
        )
        await self.execute(f"GRANT SELECT ON {table} TO {EXPORTER_ROLE}")

    async def add_dead_letter_task(
        self, slug: str, task_name: str | None, status: str, created_at: datetime | None
    ) -> None:
        table = _quote("tenant_" + slug) + ".dead_letter_queue"
        await self.execute(
            f"INSERT INTO {table} (task_name, status, created_at) VALUES ($1, $2, $3)", task_name, status, created_at
        )

    async def put_dead_letters_to_sleep(self, slug: str) -> None:
        """The tenant's dead letters behind a view that sleeps a minute: a statement
        of the exporter that runs until it is cancelled (or its statement timeout)."""
        schema = _quote("tenant_" + slug)
        await self.execute(f"ALTER TABLE {schema}.evento_dead_letter RENAME TO evento_dead_letter_rows")
        await self.execute(
            f"CREATE VIEW {schema}.evento_dead_letter AS SELECT rows.* FROM {schema}.evento_dead_letter_rows AS rows"
            " CROSS JOIN pg_sleep(60) AS slept"
        )
        await self.execute(f"GRANT SELECT ON {schema}.evento_dead_letter TO {EXPORTER_ROLE}")

    async def exporter_sessions(self) -> int:
        rows = await self.fetch(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1 AND datname = $2",
            EXPORTER_ROLE,
            self.database,
        )
        count: int = rows[0]["n"]
        return count

    async def exporter_waiting_on_a_lock(self) -> bool:
        """Whether a session of the exporter's role is blocked on another session's lock."""
        rows = await self.fetch(
            "SELECT count(*) AS n FROM pg_stat_activity"
            " WHERE usename = $1 AND datname = $2 AND wait_event_type = 'Lock'",
            EXPORTER_ROLE,
            self.database,
        )
        waiting: int = rows[0]["n"]
        return waiting > 0


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def at(text: str) -> datetime:
    """An aware UTC datetime from 'YYYY-MM-DD HH:MM:SS'."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)


async def create_platform(server: PostgresServer) -> Platform:
    name = f"platform_{next(_database_numbers)}"
    connection = await asyncpg.connect(server.url())
    try:
        await connection.execute(f"CREATE DATABASE {name}")
        roles = await connection.fetch("SELECT 1 FROM pg_roles WHERE rolname = $1", EXPORTER_ROLE)
        if not roles:
            await connection.execute(f"CREATE ROLE {EXPORTER_ROLE} LOGIN PASSWORD '{EXPORTER_PASSWORD}'")
    finally:
        await connection.close()
    platform = Platform(server, name)
    await platform.execute(sql("contract.sql"))
    await platform.execute(sql("grants.sql"))
    return platform
