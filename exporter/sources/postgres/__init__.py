"""The PostgreSQL source: many tenant schemas read over a few lanes.

The reader is `Postgres` (exporter.sources.postgres.source); asyncpg's errors
become the exporter's typed errors where they are caught
(exporter.sources.postgres.errors).
"""
