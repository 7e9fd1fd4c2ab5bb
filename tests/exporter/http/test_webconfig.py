"""The web configuration file: accepted forms and every malformed one refused."""

from __future__ import annotations

import ssl
import subprocess
import sys
from pathlib import Path

import bcrypt
import pytest
import trustme

from exporter.errors import ConfigError
from exporter.http.webconfig import load_web_config

HASH = bcrypt.hashpw(b"scrape-pass", bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("certs")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    server.private_key_pem.write_to_path(str(folder / "server.key"))
    server.cert_chain_pems[0].write_to_path(str(folder / "server.crt"))
    ca.cert_pem.write_to_path(str(folder / "ca.crt"))
    return folder


def write(folder: Path, text: str) -> str:
    path = folder / "web.yml"
    path.write_text(text)
    return str(path)


def test_full_config(certs: Path) -> None:
    config = load_web_config(
        write(
            certs,
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
            "  client_ca_file: ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS13\n"
            f"basic_auth_users:\n  prometheus: '{HASH}'\n"
            "http_server_config:\n  headers:\n    X-Frame-Options: deny\n",
        )
    )
    assert config.tls is not None
    assert config.tls.client_auth == ssl.CERT_REQUIRED
    assert config.tls.min_version == ssl.TLSVersion.TLSv1_3
    assert config.basic_auth_users == {"prometheus": HASH.encode()}
    assert config.headers == {"X-Frame-Options": "deny"}


def test_empty_file_is_no_tls_no_auth(tmp_path: Path) -> None:
    config = load_web_config(write(tmp_path, ""))
    assert config.tls is None
    assert config.basic_auth_users == {}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("tls_server_config: [", "not valid YAML"),
        ("- a\n- b\n", "must be a mapping"),
        ("unknown_section: {}\n", "unknown field 'unknown_section'"),
        ("tls_server_config:\n  cert_file: server.crt\n", "needs both cert_file and key_file"),
        ("tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n", "does not exist"),
        ("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: SSL3\n", "min_version"),
        (
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: Maybe\n",
            "client_auth_type",
        ),
        (
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
            "  client_auth_type: RequireAndVerifyClientCert\n",
            "needs client_ca_file",
        ),
        ("tls_server_config:\n  cert_file: server.key\n  key_file: server.key\n", "cannot load"),
        ("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  bogus: 1\n", "unknown field 'bogus'"),
        ("basic_auth_users:\n  prometheus: plaintext-password\n", "not a bcrypt hash"),
        ("basic_auth_users: [a]\n", "basic_auth_users"),
        (f"basic_auth_users:\n  'a:b': '{HASH}'\n", "invalid user name"),
        ("http_server_config:\n  headers: [1]\n", "headers"),
    ],
)
def test_malformed_configs_are_refused(certs: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_web_config(write(certs, text))
    assert raised.value.setting == "--web.config.file"
    assert needle in str(raised.value)
    assert "plaintext-password" not in str(raised.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_web_config(str(tmp_path / "absent.yml"))


def test_malformed_web_config_exits_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "--database-url",
            "postgresql://h/db",
            "--web.config.file",
            write(tmp_path, "basic_auth_users:\n  p: x\n"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "--web.config.file" in done.stderr


def test_aliases_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="aliases"):
        load_web_config(write(tmp_path, f"basic_auth_users:\n  a: &h '{HASH}'\n  b: *h\n"))


@pytest.mark.parametrize(
    ("cost", "problem"), [("1x", "not a bcrypt hash"), ("03", "has cost 3"), ("32", "has cost 32")]
)
def test_a_bcrypt_hash_with_an_impossible_cost_is_refused(tmp_path: Path, cost: str, problem: str) -> None:
    hashed = HASH[:4] + cost + HASH[6:]
    with pytest.raises(ConfigError, match=problem):
        load_web_config(write(tmp_path, f"basic_auth_users:\n  a: '{hashed}'\n"))


def test_a_cost_that_cannot_answer_within_a_scrape_is_refused(tmp_path: Path) -> None:
    slow = HASH[:4] + "15" + HASH[6:]
    with pytest.raises(ConfigError, match=r"has cost 15; from 4 to 14 are accepted") as refused:
        load_web_config(write(tmp_path, f"basic_auth_users:\n  a: '{slow}'\n"))
    assert slow not in str(refused.value)
    at_most = HASH[:4] + "14" + HASH[6:]
    assert load_web_config(write(tmp_path, f"basic_auth_users:\n  a: '{at_most}'\n")).basic_auth_users


def test_users_of_different_costs_are_refused(tmp_path: Path) -> None:
    other = bcrypt.hashpw(b"x", bcrypt.gensalt(rounds=5)).decode()
    assert HASH[4:6] != "05"
    with pytest.raises(ConfigError, match="hash every password with one cost") as refused:
        load_web_config(write(tmp_path, f"basic_auth_users:\n  a: '{HASH}'\n  b: '{other}'\n"))
    assert HASH not in str(refused.value)
    assert other not in str(refused.value)


@pytest.mark.parametrize("name", ["a\\nb", "a\\rb", "a\\x1bb", "a:b", ""])
def test_a_user_name_with_a_line_break_control_or_colon_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="invalid user name") as refused:
        load_web_config(write(tmp_path, f"basic_auth_users:\n  \"{name}\": '{HASH}'\n"))
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ('{X-Evil: "a"}', "'X-Evil' cannot be configured"),
        ('{"Bad Name": v}', "'Bad Name' cannot be configured"),
        ("{Content-Type: text/html}", "'Content-Type' cannot be configured"),
        ("{WWW-Authenticate: Basic}", "'WWW-Authenticate' cannot be configured"),
        ('{Content-Security-Policy: "a\\r\\nSet-Cookie: x=1"}', "not a header value"),
        ('{Strict-Transport-Security: ""}', "not a header value"),
        ('{Strict-Transport-Security: "max-age=1\\x00"}', "not a header value"),
        ("{X-Frame-Options: allow}", "X-Frame-Options must be one of deny, sameorigin"),
        ("{X-Content-Type-Options: sniff}", "must be one of nosniff"),
    ],
)
def test_only_the_toolkit_headers_with_header_values_are_accepted(tmp_path: Path, headers: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as refused:
        load_web_config(write(tmp_path, f"http_server_config:\n  headers: {headers}\n"))
    assert "\n" not in str(refused.value)
    assert "\r" not in str(refused.value)


@pytest.mark.parametrize("where", ["/dev/zero", "{tmp}"])
def test_a_device_or_a_directory_as_a_certificate_is_named_for_what_it_is(tmp_path: Path, where: str) -> None:
    path = where.format(tmp=tmp_path)
    expected = "is a directory" if path == str(tmp_path) else "is not a regular file"
    document = f"tls_server_config:\n  cert_file: {path}\n  key_file: {path}\n"
    with pytest.raises(ConfigError, match=f"cert_file: {path} {expected}"):
        load_web_config(write(tmp_path, document))
