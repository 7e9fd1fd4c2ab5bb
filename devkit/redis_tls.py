"""A throwaway Redis serving TLS with certificates made by the tests (trustme):
its plain port for the test's own client, its TLS port for the exporter."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trustme

from devkit.servers import LocalRedis, free_port
from exporter.tools import throwaway


@dataclass(frozen=True)
class TlsFiles:
    """A CA's certificate, and a certificate and key it signed, as PEM files."""

    ca: Path
    cert: Path
    key: Path


def issue(ca: trustme.CA, directory: Path, name: str, *identities: str) -> TlsFiles:
    """Files for a certificate of `identities` (host names, IP addresses, or a client's name)."""
    directory.mkdir(parents=True, exist_ok=True)
    leaf = ca.issue_cert(*identities)
    files = TlsFiles(directory / f"{name}-ca.pem", directory / f"{name}-cert.pem", directory / f"{name}-key.pem")
    ca.cert_pem.write_to_path(str(files.ca))
    leaf.cert_chain_pems[0].write_to_path(str(files.cert))
    leaf.private_key_pem.write_to_path(str(files.key))
    return files


class TlsRedis(LocalRedis):
    tls_port: int = 0

    @property
    def tls_url(self) -> str:
        return f"rediss://127.0.0.1:{self.tls_port}/0"


def start_tls_redis(server: TlsFiles, auth_clients: bool = False) -> TlsRedis:
    """A Redis on a plain port and a TLS port, with `server`'s certificate; with
    `auth_clients`, TLS clients must show a certificate signed by `server.ca`."""
    tls_port = free_port()
    redis = throwaway.start_redis(
        TlsRedis,
        (
            "--tls-port",
            str(tls_port),
            "--tls-cert-file",
            str(server.cert),
            "--tls-key-file",
            str(server.key),
            "--tls-ca-cert-file",
            str(server.ca),
            "--tls-auth-clients",
            "yes" if auth_clients else "no",
        ),
    )
    redis.tls_port = tls_port
    return redis
