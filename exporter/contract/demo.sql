-- Demo data: a few tenants with something piled up in each place the exporter reads.
INSERT INTO public.tenants (slug, status, provisioning_status) VALUES
    ('acme', 'active', 'active'),
    ('globex', 'suspended', 'active'),      -- suspended tenants are still measured
    ('initech', 'active', 'provisioning');  -- not yet provisioned: skipped

SELECT public.orpycamcp_create_tenant_schema(slug) FROM public.tenants;

INSERT INTO tenant_acme.evento_dead_letter (event_id, tenant_slug, origin_group, status, created_at) VALUES
    ('ev-1', 'acme', 'signature-service', 'pending', now() - interval '3 hours'),
    ('ev-2', 'acme', 'signature-service', 'pending', now() - interval '20 minutes'),
    ('ev-3', 'acme', 'workflow-service', 'resolved', now() - interval '2 days'),
    ('ev-4', 'acme', 'notification-service', 'discarded', now() - interval '1 day');
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
