"""The web configuration reloaded by the running process, as the exporter-toolkit
does: a rotated certificate is served to the next handshake while connections
already open keep working; SIGHUP reloads and says so; a configuration made
invalid is logged and the last valid one stays in force."""

from __future__ import annotations

import base64
import logging
import os
import signal
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import bcrypt
import httpx
import pytest
import trustme

from devkit.process import RunningProcess, exporter_process
from exporter.http.reload import REQUEST_CHECK_INTERVAL, ReloadingWebConfig
from exporter.http.webconfig import WebConfig, load_web_config
from tests.platform import Platform

PASSWORD = "scrape-pass-41"
NEW_PASSWORD = "scrape-pass-42"


def bcrypted(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


def replace(path: Path, data: bytes) -> None:
    """Written as secret stores and cert-manager do: a new file moved over the old one."""
    fresh = path.with_suffix(path.suffix + ".new")
    fresh.write_bytes(data)
    os.replace(fresh, path)


def issue(ca: trustme.CA, folder: Path) -> bytes:
    """A new server certificate and key in place; the certificate's DER."""
    cert = ca.issue_cert("127.0.0.1", "localhost")
    replace(folder / "server.key", cert.private_key_pem.bytes())
    replace(folder / "server.crt", cert.cert_chain_pems[0].bytes())
    return ssl.PEM_cert_to_DER_cert(cert.cert_chain_pems[0].bytes().decode())


def web_config(password: str) -> bytes:
    return (
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        f"basic_auth_users:\n  prometheus: '{bcrypted(password)}'\n"
    ).encode()


class Site:
    def __init__(self, ca: trustme.CA, folder: Path, process: RunningProcess, first_cert: bytes) -> None:
        self.ca = ca
        self.folder = folder
        self.process = process
        self.first_cert = first_cert

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.folder / "ca.crt"))

    def served_certificate(self) -> bytes:
        with (
            socket.create_connection(("127.0.0.1", self.process.port), timeout=5) as raw,
            self.client_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return der

    def status(self, auth: tuple[str, str] | None) -> int:
        url = f"https://127.0.0.1:{self.process.port}/metrics"
        return httpx.get(url, verify=self.client_context(), auth=auth, timeout=10).status_code

    def logged(self, text: str) -> int:
        return self.process.log().count(text)


@pytest.fixture
def site(module_platform: Platform, tmp_path: Path) -> Iterator[Site]:
    folder = tmp_path / "tls"
    folder.mkdir()
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(folder / "ca.crt"))
    first = issue(ca, folder)
    (folder / "web.yml").write_bytes(web_config(PASSWORD))
    args = ["--database.url", module_platform.exporter_url, "--web.config.file", str(folder / "web.yml")]
    ready: dict[str, object] = {"verify": ssl.create_default_context(cafile=str(folder / "ca.crt"))}
    with exporter_process(args, tmp_path, scheme="https", ready_kwargs=ready) as process:
        yield Site(ca, folder, process, first)
        assert process.process.poll() is None, "the exporter died"


def eventually(check: Callable[[], bool], within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def request(tls: ssl.SSLSocket) -> bytes:
    """One keep-alive request on an open TLS connection; the status line."""
    auth = "Basic " + base64.b64encode(f"prometheus:{PASSWORD}".encode()).decode()
    tls.sendall(f"GET /-/healthy HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n\r\n".encode())
    answer = b""
    while b"Healthy" not in answer:
        chunk = tls.recv(4096)
        assert chunk, f"the connection was closed: {answer!r}"
        answer += chunk
    return answer.split(b"\r\n", 1)[0]


def test_a_rotated_certificate_reaches_the_next_handshake_and_spares_open_connections(site: Site) -> None:
    assert site.served_certificate() == site.first_cert
    with (
        socket.create_connection(("127.0.0.1", site.process.port), timeout=5) as raw,
        site.client_context().wrap_socket(raw, server_hostname="127.0.0.1") as in_flight,
    ):
        assert request(in_flight) == b"HTTP/1.1 200 OK"
        second = issue(site.ca, site.folder)
        assert second != site.first_cert
        assert eventually(lambda: site.served_certificate() == second), "the new certificate is never served"
        # The connection opened before the rotation keeps its session and keeps being served.
        assert request(in_flight) == b"HTTP/1.1 200 OK"
        assert in_flight.getpeercert(binary_form=True) == site.first_cert
    assert site.status(("prometheus", PASSWORD)) == 200
    assert site.logged("reloaded (a file changed)") >= 1


def test_sighup_reloads_the_users_and_says_so(site: Site) -> None:
    assert site.status(("prometheus", PASSWORD)) == 200
    site.process.process.send_signal(signal.SIGHUP)
    assert eventually(lambda: site.logged("reloaded (SIGHUP)") == 1)
    replace(site.folder / "web.yml", web_config(NEW_PASSWORD))
    site.process.process.send_signal(signal.SIGHUP)
    assert eventually(lambda: site.logged("reloaded (SIGHUP)") == 2)
    assert site.status(("prometheus", NEW_PASSWORD)) == 200
    assert site.status(("prometheus", PASSWORD)) == 401


@pytest.mark.parametrize(
    "broken",
    [
        b"tls_server_config: [not, a, mapping\n",
        b"tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n",
        b"basic_auth_users:\n  prometheus: plain-text-password\n",
        b"basic_auth_users: {}\n",  # TLS dropped: takes a restart, never applied live
    ],
    ids=["yaml", "missing-file", "not-bcrypt", "tls-off"],
)
def test_an_invalid_web_config_keeps_the_last_valid_one(site: Site, broken: bytes) -> None:
    replace(site.folder / "web.yml", broken)
    site.process.process.send_signal(signal.SIGHUP)
    assert eventually(lambda: site.logged("not reloaded, the last valid one stays in force") >= 1)
    # Never an open door: the last valid users still decide.
    assert site.status(None) == 401
    assert site.status(("prometheus", PASSWORD)) == 200
    assert site.served_certificate() == site.first_cert
    # Reported once per change, however many requests look at the files.
    time.sleep(1.2)
    assert site.status(("prometheus", PASSWORD)) == 200
    assert site.logged("not reloaded") == 1
    replace(site.folder / "web.yml", web_config(NEW_PASSWORD))
    assert eventually(lambda: site.status(("prometheus", NEW_PASSWORD)) == 200)


def test_a_certificate_and_key_that_do_not_match_keep_the_old_pair(site: Site) -> None:
    other = site.ca.issue_cert("127.0.0.1")
    replace(site.folder / "server.crt", other.cert_chain_pems[0].bytes())  # the key is not replaced
    # Each handshake looks at the files: the mismatch is found, and the old pair still served.
    assert eventually(lambda: site.served_certificate() == site.first_cert and site.logged("not reloaded") >= 1)
    replace(site.folder / "server.key", other.private_key_pem.bytes())
    new = ssl.PEM_cert_to_DER_cert(other.cert_chain_pems[0].bytes().decode())
    assert eventually(lambda: site.served_certificate() == new)


# In process, on a clock the test moves: when the files are looked at, and what
# a reload keeps or refuses.


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def users(config: WebConfig) -> set[str]:
    return set(config.basic_auth_users)


def auth_file(folder: Path, *names: str) -> Path:
    path = folder / "web.yml"
    replace(path, ("basic_auth_users:\n" + "".join(f"  {n}: '{bcrypted(PASSWORD)}'\n" for n in names)).encode())
    return path


def test_the_files_are_looked_at_once_a_second_at_most(tmp_path: Path) -> None:
    path = auth_file(tmp_path, "a")
    clock = Clock()
    source = ReloadingWebConfig(str(path), load_web_config(str(path)), clock)
    auth_file(tmp_path, "b")
    clock.now += REQUEST_CHECK_INTERVAL - 0.01
    assert users(source.current()) == {"a"}
    clock.now += 0.01
    assert users(source.current()) == {"b"}
    assert source.reloads == 1
    auth_file(tmp_path, "c")
    clock.now += REQUEST_CHECK_INTERVAL - 0.01  # a second from the last look, not from the start
    assert users(source.current()) == {"b"}


def test_unchanged_files_are_not_read_again_unless_asked(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = auth_file(tmp_path, "a")
    source = ReloadingWebConfig(str(path), load_web_config(str(path)), Clock())
    assert source.check() is False
    assert source.reloads == 0
    with caplog.at_level(logging.INFO, logger="orpycamcp.webconfig"):
        assert source.check(why="SIGHUP") is True
    assert source.reloads == 1
    assert caplog.messages == [f"web config {path} reloaded (SIGHUP): no TLS, 1 basic-auth users"]
    assert source.check() is False  # what was read is remembered: no reload without a change
    assert source.reloads == 1


def test_an_invalid_change_is_reported_once_and_the_last_valid_one_stays(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = auth_file(tmp_path, "a")
    source = ReloadingWebConfig(str(path), load_web_config(str(path)), Clock())
    replace(path, b"basic_auth_users: [\n")
    with caplog.at_level(logging.INFO, logger="orpycamcp.webconfig"):
        assert source.check() is False
        assert source.check() is False  # the same invalid files: not reported again
    assert users(source.current()) == {"a"}
    assert [record.levelname for record in caplog.records] == ["ERROR"]
    assert caplog.messages[0].startswith(f"web config {path} not reloaded, the last valid one stays in force: ")
    auth_file(tmp_path, "b")
    with caplog.at_level(logging.INFO, logger="orpycamcp.webconfig"):
        assert source.check() is True
    assert caplog.messages[-1] == f"web config {path} reloaded (a file changed): no TLS, 1 basic-auth users"
    assert (users(source.current()), source.reloads) == ({"b"}, 1)


@pytest.fixture
def tls_folder(tmp_path: Path) -> tuple[trustme.CA, Path]:
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    issue(ca, tmp_path)
    return ca, tmp_path


TLS_FILES = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ("TLS off", ""),
        (
            "client certificates",
            TLS_FILES + "  client_ca_file: ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n",
        ),
        ("min_version", TLS_FILES + "  min_version: TLS13\n"),
        ("max_version", TLS_FILES + "  max_version: TLS12\n"),
    ],
)
def test_what_a_live_listener_cannot_change_takes_a_restart(
    tls_folder: tuple[trustme.CA, Path], caplog: pytest.LogCaptureFixture, change: str, text: str
) -> None:
    _, folder = tls_folder
    path = folder / "web.yml"
    replace(path, TLS_FILES.encode())
    initial = load_web_config(str(path))
    source = ReloadingWebConfig(str(path), initial, Clock())
    replace(path, text.encode())
    with caplog.at_level(logging.INFO, logger="orpycamcp.webconfig"):
        assert source.check() is False, change
    assert caplog.messages == [
        f"web config {path} not reloaded, the last valid one stays in force: invalid setting --web.config.file:"
        " turning TLS on or off, or changing client_auth_type, min_version or max_version, takes a restart"
    ]
    assert source.current() == initial


class Hello:
    """What the SNI callback is handed: a connection whose context it may swap."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context


def test_a_listener_context_needs_tls(tmp_path: Path) -> None:
    path = auth_file(tmp_path, "a")
    source = ReloadingWebConfig(str(path), load_web_config(str(path)), Clock())
    with pytest.raises(AssertionError, match=r"^server_context\(\) needs TLS in the web config$"):
        source.server_context()


def test_a_rotated_certificate_swaps_the_context_of_the_next_handshake(
    tls_folder: tuple[trustme.CA, Path], caplog: pytest.LogCaptureFixture
) -> None:
    ca, folder = tls_folder
    path = folder / "web.yml"
    replace(path, (TLS_FILES + "  client_ca_file: ca.crt\n").encode())
    source = ReloadingWebConfig(str(path), load_web_config(str(path)), Clock())
    listening = source.server_context()
    assert listening.sni_callback is not None
    hello = Hello(listening)
    listening.sni_callback(hello, None, listening)  # type: ignore[arg-type]
    assert hello.context is listening  # nothing changed: the same context
    replace(folder / "ca.crt", ca.cert_pem.bytes())  # a file it names, rewritten: a change too
    assert source.check() is True
    issue(ca, folder)
    with caplog.at_level(logging.INFO, logger="orpycamcp.webconfig"):
        listening.sni_callback(hello, None, listening)  # type: ignore[arg-type]
    assert caplog.messages == [f"web config {path} reloaded (a file changed): TLS, 0 basic-auth users"]
    assert source.reloads == 2
    assert hello.context is source.context
    assert hello.context is not listening
