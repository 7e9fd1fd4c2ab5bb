"""The catalog `serve` builds for backlogs and streams given as values rather than
a file: for the tests, benchmarks and generated docs (exporter.service.declared_catalog)."""

from __future__ import annotations

from exporter.declarations import Backlog, Declarations
from exporter.declared_streams import NO_STREAMS, DeclaredStreams
from exporter.service import Catalog, declared_catalog


def catalog_of(
    backlogs: tuple[Backlog, ...], declared_streams: DeclaredStreams = NO_STREAMS, tables: tuple[Backlog, ...] = ()
) -> Catalog:
    """`tables`: the built-in table signals whose declarations the file replaces."""
    return declared_catalog(Declarations(backlogs, declared_streams, tables=tables))
