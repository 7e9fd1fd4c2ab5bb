-- DEMO ONLY (deploy/docker-compose.yml). Runs after 01-contract.sql,
-- 02-demo.sql and 03-grants.sql, which created the read-only role
-- orpycamcp_exporter without a password. Sets its password from the
-- postgres container's ORPYCAMCP_EXPORTER_PASSWORD (the compose file defaults it
-- to the demo value "orpycamcp-demo-password"). Outside a demo, set the password
-- yourself: \password orpycamcp_exporter
\getenv exporter_password ORPYCAMCP_EXPORTER_PASSWORD
\if :{?exporter_password}
ALTER ROLE orpycamcp_exporter PASSWORD :'exporter_password';
\else
DO $$ BEGIN RAISE EXCEPTION 'ORPYCAMCP_EXPORTER_PASSWORD is not set'; END $$;
\endif
