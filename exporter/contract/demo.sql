-- Demo data: a few tenants with something piled up in each place the exporter reads.
INSERT INTO public.tenants (slug, status, provisioning_status) VALUES
    ('acme', 'active', 'active'),
    ('globex', 'suspended', 'active'),      -- suspended tenants are still measured
    ('initech', 'active', 'provisioning');  -- not yet provisioned: skipped

SELECT public.orpycamcp_create_tenant_schema(slug) FROM public.tenants;

INSERT INTO tenant_acme.evento_dead_letter (event_id, tenant_slug, origin_group, status, created_at, resolved_at) VALUES
    ('ev-1', 'acme', 'signature-service', 'pending', now() - interval '3 hours', NULL),
    ('ev-2', 'acme', 'signature-service', 'pending', now() - interval '20 minutes', NULL),
    ('ev-3', 'acme', 'workflow-service', 'resolved', now() - interval '2 days', now() - interval '1 day'),
    ('ev-4', 'acme', 'notification-service', 'discarded', now() - interval '1 day', now() - interval '12 hours');
-- notification-service's dedup guard, purged by the platform after 7 days.
INSERT INTO tenant_acme.notification_processed_events (event_id, processed_at) VALUES
    ('ev-10', now() - interval '3 days'),
    ('ev-11', now() - interval '1 hour');
INSERT INTO tenant_globex.evento_dead_letter (event_id, tenant_slug, origin_group, status, created_at) VALUES
    ('ev-1', 'globex', 'signature-service', 'pending', now() - interval '5 hours'),
    ('ev-2', 'globex', 'knowledge-service', 'pending', now() - interval '10 minutes');
INSERT INTO tenant_initech.evento_dead_letter (event_id, tenant_slug, origin_group, status, created_at) VALUES
    ('ev-1', 'initech', 'workflow-service', 'pending', now());

INSERT INTO tenant_acme.preservation_retry (artifact_id, artifact, phase, status, attempts) VALUES
    ('doc-1', 'document', 'sealing', 'exhausted', 8),
    ('doc-2', 'document', 'sealing', 'retrying', 2),
    ('sig-1', 'signature', 'fixity', 'done', 1);
INSERT INTO tenant_globex.preservation_retry (artifact_id, artifact, phase, status, attempts) VALUES
    ('aip-1', 'aip_package', 'replication', 'exhausted', 8),
    ('doc-9', 'document', 'sealing', 'exhausted', 8);

INSERT INTO public.audit_chain_runs (started_at, finished_at, scope, breaks, declared_breaks, verification_ok) VALUES
    (now() - interval '25 hours', now() - interval '24 hours', 'complete', 0, 0, true),
    (now() - interval '2 hours', now() - interval '1 hour', 'complete', 1, 1, true),
    (now() - interval '10 minutes', now() - interval '5 minutes', 'partial', 3, 0, false);

-- Tables of the declared backlogs in deploy/backlogs.example.yml: not part of
-- the contract, declared by the operator. A Celery-style dead-letter table in
-- every tenant schema, and an outbox in the public schema.
CREATE TABLE tenant_acme.dead_letter_queue (
    id         bigserial PRIMARY KEY,
    task_name  text NOT NULL,
    status     text NOT NULL CHECK (status IN ('pending', 'reprocessed', 'discarded')),
    created_at timestamptz NOT NULL
);
CREATE TABLE tenant_globex.dead_letter_queue (LIKE tenant_acme.dead_letter_queue INCLUDING ALL);
CREATE TABLE tenant_initech.dead_letter_queue (LIKE tenant_acme.dead_letter_queue INCLUDING ALL);
CREATE INDEX ON tenant_acme.dead_letter_queue (status, task_name, created_at);
CREATE INDEX ON tenant_globex.dead_letter_queue (status, task_name, created_at);
CREATE INDEX ON tenant_initech.dead_letter_queue (status, task_name, created_at);
INSERT INTO tenant_acme.dead_letter_queue (task_name, status, created_at) VALUES
    ('face_match', 'pending', now() - interval '2 hours'),
    ('face_match', 'pending', now() - interval '15 minutes'),
    ('face_match', 'reprocessed', now() - interval '50 minutes'),
    ('ocr_extraction', 'pending', now() - interval '40 minutes'),
    ('doc_processing', 'reprocessed', now() - interval '1 day'),
    ('liveness_detection', 'discarded', now() - interval '3 days');
INSERT INTO tenant_globex.dead_letter_queue (task_name, status, created_at) VALUES
    ('face_match', 'pending', now() - interval '6 hours'),
    ('liveness_detection', 'pending', now() - interval '5 minutes');
INSERT INTO tenant_initech.dead_letter_queue (task_name, status, created_at) VALUES
    ('doc_processing', 'pending', now());

CREATE TABLE public.outbox (
    id         bigserial PRIMARY KEY,
    partition  int NOT NULL,
    status     text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX outbox_state_idx ON public.outbox (partition, status, created_at);
INSERT INTO public.outbox (partition, status, created_at) VALUES
    (0, 'PENDING', now() - interval '30 minutes'),
    (0, 'FAILED', now() - interval '4 hours'),
    (0, 'PROCESSED', now() - interval '5 hours'),
    (2, 'PENDING', now() - interval '2 minutes'),
    (3, 'PROCESSED', now() - interval '90 minutes'),
    (3, 'PROCESSED', now() - interval '2 days');

-- The exporter role reads the declared tables too (grants.sql creates the role
-- if this runs first; both are idempotent).
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'orpycamcp_exporter') THEN
        CREATE ROLE orpycamcp_exporter LOGIN;
    END IF;
END
$$;
GRANT SELECT ON tenant_acme.dead_letter_queue, tenant_globex.dead_letter_queue, tenant_initech.dead_letter_queue,
    public.outbox TO orpycamcp_exporter;
