-- Reference DDL of the data contract the exporter reads.
-- The platform owns these tables; this file reproduces the columns, checks and
-- indexes the exporter relies on, for tests, benchmarks and the demo.

CREATE TABLE IF NOT EXISTS public.tenants (
    slug                text PRIMARY KEY,
    status              text NOT NULL DEFAULT 'active',      -- active | suspended | ...
    provisioning_status text NOT NULL DEFAULT 'active'       -- provisioning | active | deprovisioning
);
-- The exporter lists active tenants on every refresh.
CREATE INDEX IF NOT EXISTS tenants_provisioning_status_idx
    ON public.tenants (provisioning_status);

CREATE TABLE IF NOT EXISTS public.audit_chain_runs (
    id              bigserial PRIMARY KEY,
    started_at      timestamptz,
    finished_at     timestamptz NOT NULL,
    scope           text NOT NULL CHECK (scope IN ('complete', 'partial')),
    breaks          int,
    declared_breaks int,
    verification_ok boolean
);
-- The exporter reads the latest complete run.
CREATE INDEX IF NOT EXISTS audit_chain_runs_complete_idx
    ON public.audit_chain_runs (finished_at DESC, id DESC) WHERE scope = 'complete';

-- Creates the tenant schema tenant_<slug> with the two tables the exporter reads.
-- format('%I') quotes the schema name, whatever the slug holds.
CREATE OR REPLACE FUNCTION public.orpycamcp_create_tenant_schema(tenant_slug text)
RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
    schema_name text := 'tenant_' || tenant_slug;
BEGIN
    EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', schema_name);
    EXECUTE format($ddl$
        CREATE TABLE IF NOT EXISTS %1$I.evento_dead_letter (
            event_id     text PRIMARY KEY,
            tenant_slug  text,
            origin_group text NOT NULL,
            status       text NOT NULL CHECK (status IN ('pending', 'resolved', 'discarded')),
            created_at   timestamptz NOT NULL,
            resolved_at  timestamptz
        );
        CREATE INDEX IF NOT EXISTS evento_dead_letter_pending_idx
            ON %1$I.evento_dead_letter (origin_group, created_at) WHERE status = 'pending';
        -- The housekeeping signal reads the terminal rows the 90-day purge deletes (ADR-021 MVP-3).
        CREATE INDEX IF NOT EXISTS evento_dead_letter_terminal_idx
            ON %1$I.evento_dead_letter (origin_group, resolved_at) WHERE status IN ('resolved', 'discarded');
        -- notification-service's dedup guard (ADR-021 Fase 3, tenant migration 004), purged after
        -- 7 days on processed_at (MVP-1); the housekeeping signal reads its oldest row.
        CREATE TABLE IF NOT EXISTS %1$I.notification_processed_events (
            event_id     text PRIMARY KEY,
            processed_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX IF NOT EXISTS notification_processed_events_processed_at_idx
            ON %1$I.notification_processed_events (processed_at);
        CREATE TABLE IF NOT EXISTS %1$I.preservation_retry (
            artifact_id text NOT NULL,
            artifact    text NOT NULL,
            phase       text NOT NULL,
            status      text NOT NULL CHECK (status IN ('retrying', 'exhausted', 'done')),
            attempts    int NOT NULL DEFAULT 0,
            updated_at  timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (artifact_id, phase)
        );
        CREATE INDEX IF NOT EXISTS preservation_retry_exhausted_idx
            ON %1$I.preservation_retry (artifact, phase) WHERE status = 'exhausted';
    $ddl$, schema_name);
END
$fn$;
