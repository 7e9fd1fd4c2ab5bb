"""The web configuration file: accepted forms and every malformed one refused."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import ssl
import subprocess
import sys
from pathlib import Path

import bcrypt
import pytest
from cryptography.hazmat.primitives import serialization

from exporter.errors import ConfigError
from exporter.http.webconfig import RateLimit, load_web_config
from tests.pki import write_pki

# A fixed salt: test ids below hold the hash, and parallel workers must collect the same ids.
HASH = bcrypt.hashpw(b"scrape-pass", b"$2b$04$2Wn7rQIr.2zMhiiS03S6w.").decode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("certs")
    write_pki(folder)
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
        ("unknown_section: {}\n", "a field that is not one of basic_auth_users, http_server_config"),
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
        ("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  bogus: 1\n", "a field that is not"),
        ("basic_auth_users:\n  prometheus: plaintext-password\n", "not a bcrypt hash"),
        ("basic_auth_users: [a]\n", "basic_auth_users"),
        (f"basic_auth_users:\n  'a:b': '{HASH}'\n", "user 1 has an invalid name"),
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
            "--database.url",
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


TLS = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
HEADERS_PROBLEM = "http_server_config.headers must map header names to strings"
BURST_PROBLEM = "rate_limit.burst is not a whole number from 0 to 1000000"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- a\n", "{path} must be a mapping"),
        ("tls_server_config: 1\n", "tls_server_config must be a mapping"),
        ("http_server_config: 1\n", "http_server_config must be a mapping"),
        ("tls_server_config:\n  cert_file: server.crt\n", "tls_server_config needs both cert_file and key_file"),
        (
            TLS + "  client_auth_type: Maybe\n",
            "client_auth_type is not one of NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert",
        ),
        (TLS + "  client_ca_file: 1\n", "client_ca_file must be a file path"),
        (TLS + "  client_ca_file: nope.crt\n", "client_ca_file: {certs}/nope.crt does not exist"),
        (TLS.replace("server.crt", "nope.crt"), "cert_file: {certs}/nope.crt does not exist"),
        (TLS.replace("server.crt", "''"), "cert_file must be a file path"),
        (TLS.replace("server.key", "nope.key"), "key_file: {certs}/nope.key does not exist"),
        (TLS + "  min_version: SSL3\n", "min_version is not one of TLS10, TLS11, TLS12, TLS13"),
        (TLS + "  max_version: TLS9\n", "max_version is not one of TLS10, TLS11, TLS12, TLS13"),
        (
            TLS + "  min_version: TLS13\n  max_version: TLS12\n",
            "min_version TLS13 is above max_version TLS12: no version is left for a handshake",
        ),
        (
            TLS + "  max_version: TLS11\n",
            "max_version TLS11: this server speaks TLS12 and TLS13 only, so every handshake would fail",
        ),
        (
            TLS + "  min_version: TLS10\n  max_version: TLS10\n",
            "max_version TLS10: this server speaks TLS12 and TLS13 only, so every handshake would fail",
        ),
        ("basic_auth_users: [a]\n", "basic_auth_users must map user names to bcrypt hashes"),
        (
            f"basic_auth_users:\n  '': '{HASH}'\n",
            "basic_auth_users: user 1 has an invalid name (a name without ':' or control characters)",
        ),
        ("http_server_config:\n  headers:\n    1: x\n", HEADERS_PROBLEM),
        ("http_server_config:\n  headers:\n    X-Frame-Options: [deny]\n", HEADERS_PROBLEM),
        (TLS.replace("server.crt", '"server\\0.crt"'), "cert_file must be a file path"),
        # A path through a file: an error other than "does not exist", named by the system's words.
        (
            TLS.replace("server.crt", "server.key/server.crt"),
            "cert_file: {certs}/server.key/server.crt cannot be read: Not a directory",
        ),
        ("basic_auth_users:\n  a: 12345\n", "basic_auth_users: the password of user 1 is not a bcrypt hash"),
        ("basic_auth_users:\n  a: null\n", "basic_auth_users: the password of user 1 is not a bcrypt hash"),
        (
            f"basic_auth_users:\n  a: '{HASH[:4]}15{HASH[6:]}'\n",
            "basic_auth_users: the hash of user 1 has cost 15; from 4 to 14 are accepted"
            " (each step doubles the time of a check: 14 takes about a second)",
        ),
        (
            f"basic_auth_users:\n  a: '{HASH[:4]}05{HASH[6:]}'\n  b: '{HASH}'\n",
            "basic_auth_users: user 2 has cost 4 and user 1 cost 5: hash every password with one cost"
            " (a cheaper user would be found by the time of a wrong login)",
        ),
        (
            "http_server_config:\n  headers:\n    X-Evil: a\n",
            "http_server_config.headers: header 1 cannot be configured (these can: Strict-Transport-Security,"
            " X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, Content-Security-Policy)",
        ),
        (
            TLS + "  client_allowed_sans: [prometheus@example.org]\n",
            "client_allowed_sans needs client_auth_type RequireAndVerifyClientCert (else no SAN to match)",
        ),
        (
            "rate_limit:\n  interval: soon\n  burst: 1\n",
            "rate_limit.interval is not a duration (1s, 250ms, 1m30s; 0 disables)",
        ),
        ("rate_limit:\n  interval: 1s\n  burst: ten\n", BURST_PROBLEM),
        ("rate_limit:\n  interval: 1s\n  burst: 1000001\n", BURST_PROBLEM),
        (
            "rate_limit:\n  interval: 1s\n",  # no burst: 0
            "rate_limit.burst 0 with an interval refuses every request: give a burst of 1 or more",
        ),
        # A password written as an alias: its user is named by its place, and the
        # way to it by the format's own keys only.
        (
            "basic_auth_users:\n  alice: *hunter\n",
            "{path}: refused (line 2, column 10, at basic_auth_users > entry 1):"
            " aliases (*name) are not accepted: write the value out",
        ),
        (
            "http_server_config:\n  headers:\n    Strict-Transport-Security: ''\n",
            "http_server_config.headers: the value of Strict-Transport-Security is not a header value"
            " (visible ASCII, spaces inside; no line break or control character)",
        ),
    ],
)
def test_each_problem_names_its_field(certs: Path, text: str, problem: str) -> None:
    path = write(certs, text)
    with pytest.raises(ConfigError) as raised:
        load_web_config(path)
    assert raised.value.problem == problem.format(path=path, certs=certs.resolve())


def test_client_ca_file_and_client_ca_inline_are_exclusive(certs: Path) -> None:
    inline = "".join(f"    {line}\n" for line in (certs / "ca.crt").read_text().splitlines())
    with pytest.raises(ConfigError) as raised:
        load_web_config(write(certs, TLS + "  client_ca_file: ca.crt\n  client_ca: |\n" + inline))
    assert raised.value.problem == "client_ca_file and client_ca (inline) are exclusive: give one"


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_bytes(b"basic_auth_users:\n  alice: \xff\n")
    with pytest.raises(ConfigError) as raised:
        load_web_config(str(path))
    assert raised.value.problem == f"{path}: not UTF-8 text"


def test_a_burst_up_to_a_million_is_kept_and_a_burst_alone_limits_nothing(tmp_path: Path) -> None:
    config = load_web_config(write(tmp_path, "rate_limit:\n  interval: 2s\n  burst: 1000000\n"))
    assert config.rate_limit == RateLimit(2.0, 1_000_000)
    assert load_web_config(write(tmp_path, "rate_limit:\n  burst: 5\n")).rate_limit is None  # no interval: 0


def test_a_whole_number_header_value_is_its_text(tmp_path: Path) -> None:
    config = load_web_config(write(tmp_path, "http_server_config:\n  headers:\n    X-XSS-Protection: 1\n"))
    assert config.headers == {"X-XSS-Protection": "1"}


def test_the_defaults_of_a_tls_context_are_kept(certs: Path) -> None:
    """No max_version: the highest this OpenSSL speaks; the server's cipher order preferred,
    on top of the protocol's default options (no compression, no renegotiation...)."""
    config = load_web_config(write(certs, TLS))
    assert config.tls is not None
    assert config.tls.max_version == ssl.TLSVersion.MAXIMUM_SUPPORTED
    defaults = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).options
    options = config.tls.context().options
    assert options & defaults == defaults
    assert options & ssl.OP_CIPHER_SERVER_PREFERENCE


def test_versions_and_the_ca_file_are_kept(certs: Path) -> None:
    config = load_web_config(write(certs, TLS + "  client_ca_file: ca.crt\n  max_version: TLS12\n"))
    assert config.tls is not None
    assert config.tls.client_ca_file == str(certs.resolve() / "ca.crt")
    assert config.tls.client_auth == ssl.CERT_NONE
    assert (config.tls.min_version, config.tls.max_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2)


def test_absolute_paths_are_taken_as_they_are(certs: Path, tmp_path: Path) -> None:
    absolute = certs.resolve()
    text = f"tls_server_config:\n  cert_file: {absolute / 'server.crt'}\n  key_file: {absolute / 'server.key'}\n"
    config = load_web_config(write(tmp_path, text))
    assert config.tls is not None
    assert config.tls.cert_file == str(absolute / "server.crt")


@pytest.mark.parametrize("cost", ["04", "10", "14"])
def test_every_bcrypt_cost_from_4_to_14_is_a_hash(tmp_path: Path, cost: str) -> None:
    hashed = HASH[:4] + cost + HASH[6:]
    config = load_web_config(write(tmp_path, f"basic_auth_users:\n  a: '{hashed}'\n"))
    assert config.basic_auth_users == {"a": hashed.encode()}


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


def test_users_of_one_cost_are_all_kept(tmp_path: Path) -> None:
    other = bcrypt.hashpw(b"x", bcrypt.gensalt(rounds=4)).decode()
    config = load_web_config(write(tmp_path, f"basic_auth_users:\n  a: '{HASH}'\n  b: '{other}'\n  c: '{HASH}'\n"))
    assert config.basic_auth_users == {"a": HASH.encode(), "b": other.encode(), "c": HASH.encode()}


@pytest.mark.parametrize("name", ["a\\nb", "a\\rb", "a\\x1bb", "a:b", ""])
def test_a_user_name_with_a_line_break_control_or_colon_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="user 1 has an invalid name") as refused:
        load_web_config(write(tmp_path, f"basic_auth_users:\n  \"{name}\": '{HASH}'\n"))
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ('{X-Evil: "a"}', "header 1 cannot be configured"),
        ('{X-Frame-Options: deny, "Bad Name": v}', "header 2 cannot be configured"),
        ("{Content-Type: text/html}", "header 1 cannot be configured"),
        ("{WWW-Authenticate: Basic}", "header 1 cannot be configured"),
        ("{X-Frame-Options: deny, x-frame-options: sameorigin}", "X-Frame-Options is given twice"),
        ("{x-content-type-options: nosniff, X-CONTENT-TYPE-OPTIONS: nosniff}", "X-Content-Type-Options is given twice"),
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


def _encrypted_key(certs: Path) -> Path:
    """The server's key, encrypted with a pass phrase (PEM, as `openssl genpkey -aes256` writes it)."""
    key = serialization.load_pem_private_key((certs / "server.key").read_bytes(), password=None)
    encrypted = certs / "encrypted.key"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pass phrase"),
        )
    )
    return encrypted


def test_an_encrypted_key_is_refused_without_asking_for_its_pass_phrase(certs: Path) -> None:
    key = _encrypted_key(certs)
    with pytest.raises(ConfigError) as refused:
        load_web_config(write(certs, TLS.replace("server.key", key.name)))
    assert refused.value.problem == (
        f"key_file: {key.resolve()} is encrypted (it asks for a pass phrase): give the key unencrypted,"
        " readable by the exporter alone"
    )


HANG_SECONDS = 30  # a prompt waiting for an answer, not a slow machine: check-config takes about a second


def test_check_config_on_a_terminal_refuses_an_encrypted_key_in_one_line(certs: Path) -> None:
    """On a terminal OpenSSL would prompt `Enter PEM pass phrase:` and wait: check-config answers at once."""
    key = _encrypted_key(certs)
    config = write(certs, TLS.replace("server.key", key.name))
    argv = [sys.executable, "-m", "exporter", "check-config", "--database.url", "postgresql://h/db"]
    pid, terminal = pty.fork()
    if pid == 0:  # the child, its controlling terminal the pty
        os.execv(sys.executable, [*argv, "--web.config.file", config])  # noqa: S606 -- no shell: the argv as it is
    output = b""
    with contextlib.suppress(OSError):  # EIO once the child closed the terminal
        while True:
            readable, _, _ = select.select([terminal], [], [], HANG_SECONDS)
            if not readable:  # waiting on the terminal for a pass phrase
                os.kill(pid, signal.SIGKILL)
                break
            chunk = os.read(terminal, 4096)
            if not chunk:
                break
            output += chunk
    os.close(terminal)
    status = os.waitpid(pid, 0)[1]
    lines = output.decode().splitlines()
    assert os.waitstatus_to_exitcode(status) == 2, lines
    assert len(lines) == 1, lines
    assert "is encrypted" in lines[0], lines
    assert b"Enter PEM pass phrase" not in output
