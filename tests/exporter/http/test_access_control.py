"""TLS, mutual TLS and basic auth through a real uvicorn process, with
certificates made for the test."""

from __future__ import annotations

import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import bcrypt
import httpx
import pytest
import trustme

from devkit.process import RunningProcess, exporter_process
from tests.pki import write_pki
from tests.platform import Platform
from tests.scrapes import parse

PASSWORD = "scrape-pass-7f1"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, Path]:
    folder = tmp_path_factory.mktemp("pki")
    ca = write_pki(folder, {"client.pem": "prometheus@example.org"})
    other_ca = trustme.CA()
    other_ca.issue_cert("intruder@example.org").private_key_and_cert_chain_pem.write_to_path(
        str(folder / "intruder.pem")
    )
    return ca, folder


def _web_config(folder: Path, mutual: bool) -> Path:
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    lines = [
        "tls_server_config:",
        f"  cert_file: {folder / 'server.crt'}",
        f"  key_file: {folder / 'server.key'}",
    ]
    if mutual:
        lines += [f"  client_ca_file: {folder / 'ca.crt'}", "  client_auth_type: RequireAndVerifyClientCert"]
    lines += ["basic_auth_users:", f"  prometheus: '{hashed}'"]
    path = folder / ("web-mtls.yml" if mutual else "web-tls.yml")
    path.write_text("\n".join(lines) + "\n")
    return path


def _client_context(folder: Path, cert: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(folder / "ca.crt"))
    if cert:
        context.load_cert_chain(str(folder / cert))
    return context


@contextmanager
def _https_exporter(platform: Platform, folder: Path, mutual: bool, workdir: Path) -> Iterator[RunningProcess]:
    """The exporter over TLS; with `mutual`, it requires a client certificate (and gets it when polled)."""
    args = ["--database.url", platform.exporter_url, "--web.config.file", str(_web_config(folder, mutual))]
    ready: dict[str, object] = {"verify": _client_context(folder, "client.pem" if mutual else None)}
    with exporter_process(args, workdir, scheme="https", ready_kwargs=ready) as process:
        yield process


@pytest.fixture(scope="module")
def tls_exporter(
    module_platform: Platform, pki: tuple[trustme.CA, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProcess]:
    with _https_exporter(module_platform, pki[1], False, tmp_path_factory.mktemp("tls")) as process:
        yield process


@pytest.fixture(scope="module")
def mtls_exporter(
    module_platform: Platform, pki: tuple[trustme.CA, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProcess]:
    with _https_exporter(module_platform, pki[1], True, tmp_path_factory.mktemp("mtls")) as process:
        yield process


def _https(process: RunningProcess) -> str:
    return f"https://127.0.0.1:{process.port}"


def test_tls_with_right_credentials(tls_exporter: RunningProcess, pki: tuple[trustme.CA, Path]) -> None:
    response = httpx.get(
        _https(tls_exporter) + "/metrics", verify=_client_context(pki[1], None), auth=("prometheus", PASSWORD)
    )
    assert response.status_code == 200
    assert parse(response.content).get("orpycamcp_exporter_build_info", version="0.1.0") == 1


@pytest.mark.parametrize("auth", [None, ("prometheus", "wrong"), ("nobody", PASSWORD), ("prometheus", "")])
def test_basic_auth_refuses(
    tls_exporter: RunningProcess, pki: tuple[trustme.CA, Path], auth: tuple[str, str] | None
) -> None:
    response = httpx.get(_https(tls_exporter) + "/metrics", verify=_client_context(pki[1], None), auth=auth)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Basic")
    assert b"orpycamcp_" not in response.content


def test_plain_http_is_not_served_on_the_tls_port(tls_exporter: RunningProcess) -> None:
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{tls_exporter.port}/metrics", auth=("prometheus", PASSWORD))


def test_untrusted_server_certificate_is_refused_by_clients(tls_exporter: RunningProcess) -> None:
    with pytest.raises(httpx.ConnectError):
        httpx.get(_https(tls_exporter) + "/metrics", verify=ssl.create_default_context())


def test_proxy_barrier_holds_under_auth(tls_exporter: RunningProcess, pki: tuple[trustme.CA, Path]) -> None:
    response = httpx.get(
        _https(tls_exporter) + "/metrics",
        verify=_client_context(pki[1], None),
        auth=("prometheus", PASSWORD),
        headers={"X-Forwarded-For": "10.1.1.1"},
    )
    assert response.status_code == 404


def test_mutual_tls_accepts_a_client_certificate_of_the_ca(
    mtls_exporter: RunningProcess, pki: tuple[trustme.CA, Path]
) -> None:
    response = httpx.get(
        _https(mtls_exporter) + "/metrics", verify=_client_context(pki[1], "client.pem"), auth=("prometheus", PASSWORD)
    )
    assert response.status_code == 200


@pytest.mark.parametrize("cert", [None, "intruder.pem"])
def test_mutual_tls_refuses_without_or_with_a_foreign_certificate(
    mtls_exporter: RunningProcess, pki: tuple[trustme.CA, Path], cert: str | None
) -> None:
    with pytest.raises(httpx.HTTPError):
        httpx.get(
            _https(mtls_exporter) + "/metrics", verify=_client_context(pki[1], cert), auth=("prometheus", PASSWORD)
        )


# --- the image's health check against TLS, basic auth and client certificates -------------------


def _healthcheck(process: RunningProcess, web_config: Path) -> subprocess.CompletedProcess[str]:
    """`orpycamcp-exporter healthcheck` with the serving process's address and web config, as the image runs it."""
    # No database URL: the health check reads only the address and the web configuration.
    env = {"PATH": "/usr/bin:/bin"}
    env |= {"ORPYCAMCP_LISTEN_ADDRESS": f"127.0.0.1:{process.port}", "ORPYCAMCP_WEB_CONFIG_FILE": str(web_config)}
    command = [sys.executable, "-m", "exporter", "healthcheck"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_start_up_line_says_tls_and_basic_auth_are_on(tls_exporter: RunningProcess) -> None:
    assert f"on 127.0.0.1:{tls_exporter.port}, TLS on, basic auth on (1 user) (ttl" in tls_exporter.log()


def test_healthcheck_over_tls_with_basic_auth(tls_exporter: RunningProcess, pki: tuple[trustme.CA, Path]) -> None:
    done = _healthcheck(tls_exporter, pki[1] / "web-tls.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        done.stdout == f"healthy: https://127.0.0.1:{tls_exporter.port}/-/healthy: answered 401, basic auth required\n"
    )


def test_healthcheck_with_client_certificates_required(
    mtls_exporter: RunningProcess, pki: tuple[trustme.CA, Path]
) -> None:
    """The probe offers the server's own certificate, which the client CA signed here."""
    done = _healthcheck(mtls_exporter, pki[1] / "web-mtls.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith("/-/healthy: answered 401, basic auth required\n")


def test_healthcheck_in_plain_http_against_a_tls_server_fails(tls_exporter: RunningProcess, tmp_path: Path) -> None:
    empty = tmp_path / "web.yml"
    empty.write_text("")
    done = _healthcheck(tls_exporter, empty)
    assert done.returncode == 1
    assert done.stdout.startswith(f"unhealthy: http://127.0.0.1:{tls_exporter.port}/-/healthy: ")
