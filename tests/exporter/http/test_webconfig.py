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

# A fixed salt: test ids below hold the hash, and parallel workers must collect the same ids.
HASH = bcrypt.hashpw(b"scrape-pass", b"$2b$04$2Wn7rQIr.2zMhiiS03S6w.").decode()


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


@pytest.mark.parametrize("cost", ["03", "32", "1x"])
def test_a_bcrypt_hash_with_an_impossible_cost_is_refused(tmp_path: Path, cost: str) -> None:
    hashed = HASH[:4] + cost + HASH[6:]
    with pytest.raises(ConfigError, match="not a bcrypt hash"):
        load_web_config(write(tmp_path, f"basic_auth_users:\n  a: '{hashed}'\n"))
