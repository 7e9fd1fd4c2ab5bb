"""Certificates made for a test: a CA, a server certificate for 127.0.0.1 and
localhost, and client certificates, written where the web configuration reads them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import trustme


def write_pki(folder: Path, clients: Mapping[str, str] | None = None) -> trustme.CA:
    """server.crt, server.key and ca.crt in `folder`, and for each file name in `clients`
    a key and certificate (one PEM) for its identity, signed by the same CA."""
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    server.private_key_pem.write_to_path(str(folder / "server.key"))
    server.cert_chain_pems[0].write_to_path(str(folder / "server.crt"))
    ca.cert_pem.write_to_path(str(folder / "ca.crt"))
    for name, identity in (clients or {}).items():
        ca.issue_cert(identity).private_key_and_cert_chain_pem.write_to_path(str(folder / name))
    return ca
