"""The exporter-toolkit's web configuration keys beyond files, users and headers
(docs/web-configuration.md of prometheus/exporter-toolkit): each accepted with the
toolkit's meaning, shown on a real server, or refused in one line naming why
Python's TLS cannot honour it and what to use instead."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from devkit.process import exporter_process
from devkit.tools import tool
from exporter.errors import ConfigError
from exporter.http.limits import has_allowed_san
from exporter.http.ratelimit import TokenBucket
from exporter.http.webconfig import RateLimit, load_web_config
from tests.pki import write_pki

DATABASE = ["--database.url", "postgresql://u:p@127.0.0.1:9/db"]
SECRET_KEY_TEXT = "-----BEGIN PRIVATE KEY-----\nMIIsecretmaterialXYZ\n-----END PRIVATE KEY-----\n"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pki")
    write_pki(folder, {"allowed.pem": "prometheus@example.org", "other.pem": "intruder@example.org"})
    return folder


def _write(folder: Path, name: str, tls: str = "", rest: str = "") -> Path:
    path = folder / name
    head = f"tls_server_config:\n  cert_file: {folder / 'server.crt'}\n  key_file: {folder / 'server.key'}\n"
    path.write_text(head + tls + rest, encoding="utf-8")
    return path


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines())


def test_every_documented_key_together_is_accepted(pki: Path) -> None:
    """A file using each key of the toolkit's format, in its documented types."""
    ca_pem = (pki / "ca.crt").read_text()
    tls = (
        "  client_auth_type: RequireAndVerifyClientCert\n"
        f"  client_ca: |\n{_indent(ca_pem)}"
        "  client_allowed_sans: [prometheus@example.org, 10.0.0.7]\n"
        "  min_version: TLS12\n  max_version: TLS13\n"
        "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,"
        " TLS_AES_128_GCM_SHA256]\n"
        "  prefer_server_cipher_suites: false\n"
        "  curve_preferences: [CurveP384]\n"
    )
    rest = (
        "http_server_config:\n  http2: true\n  headers:\n    X-Frame-Options: deny\n"
        "rate_limit:\n  interval: 1m30s\n  burst: 5\n"
    )
    web = load_web_config(str(_write(pki, "all.yml", tls, rest)))
    assert web.tls is not None
    assert web.tls.ciphers == "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305"
    assert web.tls.prefer_server_ciphers is False
    assert web.tls.curve == "secp384r1"
    assert web.tls.allowed_sans == frozenset({"prometheus@example.org", "10.0.0.7"})
    assert web.tls.client_ca == ca_pem
    assert web.rate_limit == RateLimit(90.0, 5)
    assert web.http2_asked is True
    context = web.tls.context()
    assert not context.options & ssl.OP_CIPHER_SERVER_PREFERENCE
    assert {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"} == {
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
    }
    assert "BEGIN CERTIFICATE" not in repr(web.tls)


def test_the_toolkit_defaults_hold_when_the_keys_are_left_out(pki: Path) -> None:
    web = load_web_config(str(_write(pki, "plain.yml")))
    assert web.tls is not None
    assert web.tls.context().options & ssl.OP_CIPHER_SERVER_PREFERENCE  # prefer_server_cipher_suites: true
    assert (web.tls.ciphers, web.tls.curve, web.tls.allowed_sans, web.rate_limit) == (None, None, None, None)
    zero = load_web_config(str(_write(pki, "zero.yml", rest="rate_limit:\n  interval: 0\n  burst: 10\n")))
    assert zero.rate_limit is None  # "set to 0 to disable rate limiter"


@pytest.mark.parametrize(
    ("tls", "rest", "says"),
    [
        (f"  cert: |\n{_indent('-----BEGIN CERTIFICATE-----')}", "", "Python's ssl module loads a server certificate"),
        (f"  key: |\n{_indent(SECRET_KEY_TEXT)}", "", "use key_file"),
        ("  curve_preferences: [X25519, CurveP256]\n", "", "not a preference list: name one curve"),
        ("  curve_preferences: [X25519MLKEM768]\n", "", "not in this OpenSSL"),
        ("  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n", "", "not one of Go's secure TLS 1.2 cipher suites"),
        ("  cipher_suites: TLS_RSA_WITH_AES_128_CBC_SHA\n", "", "must be a list of names"),
        ("  client_allowed_sans: [prometheus@example.org]\n", "", "needs client_auth_type RequireAndVerifyClientCert"),
        ("  client_ca: not a certificate\n", "", "must be PEM text"),
        ("  prefer_server_cipher_suites: maybe\n", "", "must be true or false"),
        ("", "rate_limit:\n  interval: 1 second\n  burst: 1\n", "is not a duration"),
        ("", "rate_limit:\n  interval: 1s\n  burst: 0\n", "refuses every request"),
        ("", "rate_limit:\n  interval: 1s\n  burst: -1\n", "is not a whole number"),
        ("", "rate_limit:\n  per: 1s\n", "rate_limit: a field that is not one of burst, interval"),
        ("", "http_server_config:\n  http2: yes please\n", "must be true or false"),
    ],
)
def test_a_key_that_cannot_be_honoured_is_refused_in_one_line(pki: Path, tls: str, rest: str, says: str) -> None:
    path = _write(pki, "refused.yml", tls, rest)
    with pytest.raises(ConfigError) as raised:
        load_web_config(str(path))
    assert says in str(raised.value)
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "check-config", *DATABASE, "--web.config.file", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert says in done.stderr
    assert "secretmaterial" not in done.stderr


def test_cipher_suites_are_what_a_tls12_client_gets(pki: Path, tmp_path: Path) -> None:
    """trustme's keys are ECDSA: the ECDSA suites are the ones a handshake can use."""
    tls = "  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n"
    config = _write(pki, "ciphers.yml", tls)
    client = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    args = [*DATABASE, "--web.config.file", str(config)]
    with exporter_process(args, tmp_path, scheme="https", ready_kwargs={"verify": client}) as exporter:
        assert httpx.get(f"https://127.0.0.1:{exporter.port}/-/healthy", verify=client).status_code == 200
        # A client offering only another suite gets no handshake.
        other = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        other.maximum_version = ssl.TLSVersion.TLSv1_2
        other.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"https://127.0.0.1:{exporter.port}/-/healthy", verify=other)
        chosen = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        chosen.maximum_version = ssl.TLSVersion.TLSv1_2
        with chosen.wrap_socket(
            socket.create_connection(("127.0.0.1", exporter.port)), server_hostname="127.0.0.1"
        ) as connection:
            negotiated = connection.cipher()
        assert negotiated is not None
        assert negotiated[0] == "ECDHE-ECDSA-AES256-GCM-SHA384"


def test_client_allowed_sans_is_enforced_on_every_connection(pki: Path, tmp_path: Path) -> None:
    tls = (
        f"  client_ca_file: {pki / 'ca.crt'}\n  client_auth_type: RequireAndVerifyClientCert\n"
        "  client_allowed_sans: [prometheus@example.org]\n"
    )
    config = _write(pki, "sans.yml", tls)

    def client(cert: str) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / cert))
        return context

    args = [*DATABASE, "--web.config.file", str(config)]
    with exporter_process(args, tmp_path, scheme="https", ready_kwargs={"verify": client("allowed.pem")}) as exporter:
        url = f"https://127.0.0.1:{exporter.port}/metrics"
        for _ in range(2):
            assert httpx.get(url, verify=client("allowed.pem"), timeout=10).status_code == 200
            # Signed by the same CA, without the allowed SAN: disconnected before any answer.
            with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError, httpx.ConnectError)):
                httpx.get(url, verify=client("other.pem"), timeout=10)


def test_rate_limit_answers_429_past_the_burst(pki: Path, tmp_path: Path) -> None:
    """An hour per token: no token comes back during the test, whatever the machine's speed."""
    config = tmp_path / "rate.yml"
    config.write_text("rate_limit:\n  interval: 1h\n  burst: 3\n", encoding="utf-8")
    with exporter_process([*DATABASE, "--web.config.file", str(config)], tmp_path) as exporter:
        # The readiness probe took one token; two are left.
        codes = [httpx.get(exporter.url + "/-/healthy", timeout=10).status_code for _ in range(4)]
    assert codes[-2:] == [429, 429]
    assert codes.count(200) in (1, 2)


def test_http2_true_is_accepted_and_said_once(pki: Path, tmp_path: Path) -> None:
    config = tmp_path / "h2.yml"
    config.write_text("http_server_config:\n  http2: true\n", encoding="utf-8")
    with exporter_process([*DATABASE, "--web.config.file", str(config)], tmp_path) as exporter:
        assert httpx.get(exporter.url + "/-/healthy", timeout=10).status_code == 200
        log = exporter.log()
    assert log.count("http2: true is not honoured: this exporter serves HTTP/1.1 only") == 1


def test_the_token_bucket_is_the_toolkit_limiter() -> None:
    now = [0.0]
    bucket = TokenBucket(RateLimit(interval=10.0, burst=2), clock=lambda: now[0])
    assert [bucket.allow() for _ in range(3)] == [True, True, False]
    now[0] = 9.9
    assert not bucket.allow()
    now[0] = 10.0
    assert bucket.allow()
    assert not bucket.allow()
    now[0] = 1000.0  # refilled to the burst, never beyond
    assert [bucket.allow() for _ in range(3)] == [True, True, False]


@pytest.mark.parametrize(
    ("sans", "allowed", "admitted"),
    [
        ((("DNS", "scraper.example.org"),), {"scraper.example.org"}, True),
        ((("email", "prometheus@example.org"),), {"prometheus@example.org"}, True),
        ((("IP Address", "2001:DB8:0:0:0:0:0:1\n"),), {"2001:db8::1"}, True),
        (
            (("URI", "spiffe://cluster/ns/monitoring/sa/prometheus"),),
            {"spiffe://cluster/ns/monitoring/sa/prometheus"},
            True,
        ),
        ((("DNS", "scraper.example.org.evil"),), {"scraper.example.org"}, False),
        ((), {"scraper.example.org"}, False),
    ],
)
def test_a_san_matches_exactly(sans: tuple[tuple[str, str], ...], allowed: set[str], admitted: bool) -> None:
    assert has_allowed_san({"subjectAltName": sans}, frozenset(allowed)) is admitted
    assert has_allowed_san(None, frozenset(allowed)) is False


def _handshake(port: int, ca: Path, group: str) -> subprocess.CompletedProcess[str]:
    """openssl s_client offering one key-exchange group, TLS 1.3 and 1.2 alike."""
    command = [tool("openssl"), "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile", str(ca)]
    command += ["-groups", group, "-verify_return_error", "-brief"]
    return subprocess.run(command, input="", capture_output=True, text=True, timeout=30)


def test_curve_preferences_is_the_one_group_a_client_can_use(pki: Path, tmp_path: Path) -> None:
    config = _write(pki, "curve.yml", "  curve_preferences: [CurveP384]\n")
    client = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    args = [*DATABASE, "--web.config.file", str(config)]
    with exporter_process(args, tmp_path, scheme="https", ready_kwargs={"verify": client}) as exporter:
        chosen = _handshake(exporter.port, pki / "ca.crt", "P-384")
        other = _handshake(exporter.port, pki / "ca.crt", "X25519")
    assert chosen.returncode == 0, chosen.stderr
    assert "CONNECTION ESTABLISHED" in chosen.stderr
    assert "Protocol version: TLSv1.3" in chosen.stderr
    # No group in common: the server ends the handshake.
    assert other.returncode != 0
    assert "CONNECTION ESTABLISHED" not in other.stderr
    # Without the key, OpenSSL's defaults take X25519.
    plain = [*DATABASE, "--web.config.file", str(_write(pki, "no-curve.yml"))]
    with exporter_process(plain, tmp_path, scheme="https", ready_kwargs={"verify": client}) as exporter:
        assert "CONNECTION ESTABLISHED" in _handshake(exporter.port, pki / "ca.crt", "X25519").stderr
