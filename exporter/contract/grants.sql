-- Least privilege for the exporter role orpycamcp_exporter: CONNECT on the
-- database, USAGE on the schemas it reads, SELECT on the contract tables.
-- Nothing else. Run as the owner of the schemas (psql -f, or any client);
-- set the password separately (\password orpycamcp_exporter), never in a file.

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'orpycamcp_exporter') THEN
        CREATE ROLE orpycamcp_exporter LOGIN;
    END IF;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO orpycamcp_exporter', current_database());
END
$$;

-- Every session of the role is read-only, even one that forgets to ask.
ALTER ROLE orpycamcp_exporter SET default_transaction_read_only = on;

-- A statement of the exporter that fails (one tenant's table dropped) is logged
-- by the server with its error, not with its text: a batch statement reads
-- hundreds of schemas (~100 KB of SQL). Only a superuser may set this; run by
-- another owner, the script says so and goes on.
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER ROLE orpycamcp_exporter SET log_min_error_statement = panic;
    ELSE
        RAISE NOTICE 'not a superuser: the server logs the text of a failing exporter statement'
            ' (ALTER ROLE orpycamcp_exporter SET log_min_error_statement = panic, as a superuser, stops that)';
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO orpycamcp_exporter;
GRANT SELECT ON public.tenants, public.audit_chain_runs TO orpycamcp_exporter;

-- Call from the provisioning job for every new tenant (tenant schemas are
-- created after this script runs); format('%I') quotes any slug safely.
CREATE OR REPLACE FUNCTION public.orpycamcp_grant_tenant(tenant_slug text)
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO orpycamcp_exporter', 'tenant_' || tenant_slug);
    EXECUTE format('GRANT SELECT ON %1$I.evento_dead_letter, %1$I.preservation_retry,'
                   ' %1$I.notification_processed_events TO orpycamcp_exporter',
                   'tenant_' || tenant_slug);
END
$fn$;

SELECT public.orpycamcp_grant_tenant(slug)
FROM public.tenants
WHERE to_regnamespace(quote_ident('tenant_' || slug)) IS NOT NULL;
