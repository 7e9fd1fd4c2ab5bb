"""The platform's data contract as SQL, shipped with the package: the tables
the exporter reads (contract.sql), the read-only exporter role (grants.sql) and
the demo tenants (demo.sql). The demo and the tests load them; operators run
contract.sql's checks and grants.sql against their own database."""

from __future__ import annotations

from importlib import resources

FILES = ("contract.sql", "demo.sql", "grants.sql")


def sql(name: str) -> str:
    """The text of one of the contract's SQL files."""
    if name not in FILES:
        raise ValueError(f"{name!r} is not one of the contract files {FILES}")
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
