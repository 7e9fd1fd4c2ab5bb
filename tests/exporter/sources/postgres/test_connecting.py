"""The ways to connect to one PostgreSQL: TLS with verify-full (and a client
certificate), a wrong CA, a unix socket (and a socket directory that does not
exist), a password with URL-special characters, PGPASSWORD and PGPASSFILE,
and URLs from files. Real servers; certificates made by trustme."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from devkit.servers import LocalPostgres, ServerUnavailable, start_postgres
from exporter.tools.demo import EXPORTER_ROLE
from exporter.tools.throwaway import unprivileged_user
from tests.faults.kit import capture, reasons
from tests.platform import EXPORTER_PASSWORD, Platform, at, create_platform
from tests.scrapes import make_exporter, scrape

pytestmark = pytest.mark.anyio

SIGNALS = ("dlq", "preservation", "audit_chain")
CERT_USER = "orpycamcp_cert"
# Every character a URL gives a meaning to, and a few more.
SPECIAL_PASSWORD = "p@ss:w/o?r#d%&=+ '\"\\;,[]é"
SPECIAL_USER = "orpycamcp_special"


@dataclass
class TlsServer:
    server: LocalPostgres
    platform: Platform
    ca: Path
    client_cert: Path
    client_key: Path

    def url(self, user: str = EXPORTER_ROLE, password: str | None = EXPORTER_PASSWORD, query: str = "") -> str:
        secret = "" if password is None else ":" + urllib.parse.quote(password, safe="")
        return f"postgresql://{user}{secret}@127.0.0.1:{self.server.port}/{self.platform.database}{query}"


def _owned_by_server(path: Path) -> None:
    user = unprivileged_user()
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)


@pytest.fixture(scope="module")
def tls() -> Iterator[TlsServer]:
    # Not under pytest's temporary directory: its parents are private to this user, and
    # the server runs as another.
    files = Path(tempfile.mkdtemp(prefix="orpycamcp-tls-"))
    files.chmod(0o755)
    ca = trustme.CA()
    server_cert = ca.issue_cert("localhost", "127.0.0.1")
    server_cert.private_key_and_cert_chain_pem.write_to_path(str(files / "server.pem"))
    server_cert.private_key_pem.write_to_path(str(files / "server.key"))
    server_cert.cert_chain_pems[0].write_to_path(str(files / "server.crt"))
    ca.cert_pem.write_to_path(str(files / "ca.crt"))
    client = ca.issue_cert("client.orpycamcp.test", common_name=CERT_USER)
    client.cert_chain_pems[0].write_to_path(str(files / "client.crt"))
    client.private_key_pem.write_to_path(str(files / "client.key"))
    (files / "client.key").chmod(0o600)
    for name in ("server.key", "server.crt", "ca.crt"):
        _owned_by_server(files / name)
    try:
        server = start_postgres(
            {
                "ssl": "on",
                "ssl_cert_file": str(files / "server.crt"),
                "ssl_key_file": str(files / "server.key"),
                "ssl_ca_file": str(files / "ca.crt"),
            }
        )
    except ServerUnavailable as exc:
        shutil.rmtree(files, ignore_errors=True)
        pytest.fail(str(exc), pytrace=False)
    (files / "ca.crt").chmod(0o644)  # read by the server at start; by the exporter (another user) from now on
    try:
        # A role that logs in by its client certificate alone (pg_hba "cert"), read-only like the exporter's.
        hba = server.datadir / "pg_hba.conf"
        hba.write_text(f"hostssl all {CERT_USER} 127.0.0.1/32 cert\n" + hba.read_text())

        async def build() -> Platform:
            platform = await create_platform(server)
            await platform.add_tenant("acme")
            await platform.add_dead_letter("acme", "e1", "workflow-service", "pending", at("2026-11-01 00:00:00"))
            await platform.execute(f"CREATE ROLE {CERT_USER} LOGIN IN ROLE {EXPORTER_ROLE}")
            await platform.execute(f"ALTER ROLE {CERT_USER} SET default_transaction_read_only = on")
            await platform.execute(
                f"CREATE ROLE {SPECIAL_USER} LOGIN IN ROLE {EXPORTER_ROLE} PASSWORD "
                + "'"
                + SPECIAL_PASSWORD.replace("'", "''")
                + "'"
            )
            await platform.execute("SELECT pg_reload_conf()")
            return platform

        platform = asyncio.run(build())
        yield TlsServer(server, platform, files / "ca.crt", files / "client.crt", files / "client.key")
    finally:
        server.remove()
        shutil.rmtree(files, ignore_errors=True)


async def measured_pending(url: str) -> float | None:
    exporter = make_exporter(url)
    try:
        page = await scrape(exporter)
        assert [page.measured(signal) for signal in SIGNALS] == [1, 1, 1]
        return page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service")
    finally:
        await exporter.close()


async def unmeasured_detail(url: str, caplog: pytest.LogCaptureFixture) -> str:
    capture(caplog)
    exporter = make_exporter(url, signals="audit_chain")
    try:
        page = await scrape(exporter)
        assert page.measured("audit_chain") == 0
        assert page.series_of("orpycamcp_audit_chain_") == []
    finally:
        await exporter.close()
    assert reasons(caplog) == {"connection_error"}
    return "\n".join(record.getMessage() for record in caplog.records if record.name == "orpycamcp.measure")


async def test_tls_verify_full(tls: TlsServer) -> None:
    assert await measured_pending(tls.url(query=f"?sslmode=verify-full&sslrootcert={tls.ca}")) == 1


async def test_tls_client_certificate(tls: TlsServer) -> None:
    query = f"?sslmode=verify-full&sslrootcert={tls.ca}&sslcert={tls.client_cert}&sslkey={tls.client_key}"
    assert await measured_pending(tls.url(user=CERT_USER, password=None, query=query)) == 1


async def test_tls_with_a_wrong_ca_is_refused_and_said(tls: TlsServer, caplog: pytest.LogCaptureFixture) -> None:
    other = tls.ca.parent / "other-ca.crt"
    trustme.CA().cert_pem.write_to_path(str(other))
    detail = await unmeasured_detail(tls.url(query=f"?sslmode=verify-full&sslrootcert={other}"), caplog)
    assert f"127.0.0.1:{tls.server.port}: TLS: the server's certificate is refused: " in detail
    assert EXPORTER_PASSWORD not in detail


async def test_each_host_that_fails_is_named_with_its_problem(tls: TlsServer, caplog: pytest.LogCaptureFixture) -> None:
    url = f"postgresql://{EXPORTER_ROLE}:{EXPORTER_PASSWORD}@[::1]:{tls.server.port},127.0.0.2:{tls.server.port}"
    # Neither host answers (the server listens on 127.0.0.1 only): each is named, one per attempt.
    detail = await unmeasured_detail(
        f"{url}/{tls.platform.database}?sslmode=verify-full&sslrootcert={tls.ca}&connect_timeout=2", caplog
    )
    assert f"[::1]:{tls.server.port}: " in detail
    assert f"127.0.0.2:{tls.server.port}: " in detail


async def test_unix_socket_in_both_forms(tls: TlsServer) -> None:
    directory = str(tls.server.base)
    encoded = urllib.parse.quote(directory, safe="")
    auth = f"{EXPORTER_ROLE}:{EXPORTER_PASSWORD}"
    assert await measured_pending(f"postgresql://{auth}@{encoded}:{tls.server.port}/{tls.platform.database}") == 1
    query = f"?host={directory}&port={tls.server.port}"
    assert await measured_pending(f"postgresql://{auth}@/{tls.platform.database}{query}") == 1


async def test_a_socket_directory_that_does_not_exist_is_named(
    tls: TlsServer, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tls.server.base / "no-such-directory"
    url = f"postgresql://{EXPORTER_ROLE}:{EXPORTER_PASSWORD}@/{tls.platform.database}?host={missing}"
    detail = await unmeasured_detail(url, caplog)
    assert f"socket {missing}/.s.PGSQL.5432: socket directory {missing} does not exist" in detail


async def test_a_password_with_url_special_characters_percent_encoded(tls: TlsServer) -> None:
    assert await measured_pending(tls.url(user=SPECIAL_USER, password=SPECIAL_PASSWORD)) == 1


async def test_pgpassword_when_the_url_has_none(tls: TlsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", EXPORTER_PASSWORD)
    assert await measured_pending(tls.url(password=None)) == 1


async def test_the_url_password_wins_over_pgpassword(
    tls: TlsServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PGPASSWORD", "wrong")
    assert await measured_pending(tls.url()) == 1
    capture(caplog)
    exporter = make_exporter(tls.url(password=None), signals="audit_chain")
    try:
        assert (await scrape(exporter)).measured("audit_chain") == 0
    finally:
        await exporter.close()
    assert reasons(caplog) == {"authentication_failed"}


async def test_pgpassfile_when_the_url_has_none(
    tls: TlsServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{tls.server.port}:{tls.platform.database}:{EXPORTER_ROLE}:{EXPORTER_PASSWORD}\n")
    passfile.chmod(0o600)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    assert await measured_pending(tls.url(password=None)) == 1
    monkeypatch.delenv("PGPASSFILE")
    assert await measured_pending(tls.url(password=None, query=f"?passfile={passfile}")) == 1


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
        check=False,
    )


def test_urls_from_files(tls: TlsServer, tmp_path: Path) -> None:
    secret = tmp_path / "database-url"
    secret.write_text(tls.url(user=SPECIAL_USER, password=SPECIAL_PASSWORD) + "\n")
    done = run_cli(["diagnose"], {"DATABASE_URL_FILE": str(secret)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   dlq: measurable" in done.stdout
    assert SPECIAL_PASSWORD not in done.stdout
    assert urllib.parse.quote(SPECIAL_PASSWORD, safe="") not in done.stdout
    done = run_cli(["diagnose", "--database.url-file", str(secret)], {})
    assert done.returncode == 0, done.stdout + done.stderr
