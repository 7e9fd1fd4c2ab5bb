"""The exporter-toolkit's own example web configuration files (tests/data/exporter-toolkit,
vendored at its commit 19a7c2d) loaded as `check-config --web.config.file` loads them: each
accepted or refused as the toolkit decides (its `.good.`/`.bad.` name and its Go test,
web/tls_config_test.go), or, where this exporter deliberately differs, saying why
(docs/security.md, "The toolkit's example files here")."""

from __future__ import annotations

import shutil
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from exporter.errors import ConfigError
from exporter.http.webconfig import RateLimit, WebConfig, load_web_config

TOOLKIT = Path(__file__).parents[2] / "data" / "exporter-toolkit"
TESTDATA = TOOLKIT / "web" / "testdata"
# Go falls back to the system's roots for client certificates when no client CA is given;
# Python's ssl verifies a client certificate only against the CAs it is given, so a
# client_auth_type that verifies needs one named here (a public CA's every client admitted
# is not a default this exporter takes).
NO_CLIENT_CA = (
    "client_auth_type without client_ca_file: Go verifies client certificates against the system's roots;"
    " here a verifying client_auth_type needs the client CA named"
)
NEEDS_CA = "client_auth_type VerifyClientCertIfGiven needs client_ca_file"
INLINE = "Python's ssl loads a server certificate and key from files only (SSLContext.load_cert_chain)"
COST = "bcrypt cost 18 refused: from 4 to 14 are accepted (18 takes about 16 s per check, longer than a scrape)"


def _tls(config: WebConfig) -> ssl.SSLContext:
    assert config.tls is not None
    return config.tls.context()


@dataclass(frozen=True)
class Case:
    file: str  # relative to tests/data/exporter-toolkit
    toolkit: str  # the toolkit's verdict
    refused: str | None = None  # a part of the one-line refusal here; None: accepted
    means: Callable[[WebConfig], bool] | None = None  # what an accepted file means here
    differs_because: str = ""


def _tls_only(config: WebConfig) -> bool:
    return config.tls is not None and not config.basic_auth_users and config.rate_limit is None


CASES = [
    Case(
        "docs/web-config.yml",
        "refused where it lies: docs/ holds no server.crt (no such file)",
        refused="cert_file: {dir}/server.crt does not exist",
    ),
    Case(
        "web/testdata/tls_config_noAuth.requireandverifyclientcert.good.yml",
        "accepted",
        means=lambda c: (
            c.tls is not None
            and c.tls.client_auth == ssl.CERT_REQUIRED
            and c.tls.client_ca_file == str(TESTDATA.resolve() / "client_selfsigned.pem")
        ),
    ),
    Case(
        "web/testdata/tls_config_noAuth.requireanyclientcert.good.yml",
        "accepted",
        refused="client_auth_type is not one of NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert",
        differs_because="RequireAnyClientCert (request, never verify) has no equivalent: Python verifies any"
        " client certificate it requests",
    ),
    Case(
        "web/testdata/tls_config_noAuth.requireanyclientcertkeyinline.good.yml",
        "accepted",
        refused="tls_server_config.key (inline PEM) cannot be honoured",
        differs_because=INLINE,
    ),
    Case(
        "web/testdata/web_config_auth_clientCAs_invalid.bad.yml",
        "refused: no such file",
        refused="client_ca_file: {dir}/somefile does not exist",
    ),
    Case(
        "web/testdata/web_config_auth_clientCAs_missing.bad.yml",
        "refused (.bad.)",
        refused="client_auth_type RequireAndVerifyClientCert needs client_ca_file",
    ),
    Case(
        "web/testdata/web_config_auth_client_san.bad.yaml",
        "accepted; a client certificate without the SAN `bad` is refused at its handshake (bad certificate)",
        means=lambda c: c.tls is not None and c.tls.allowed_sans == frozenset({"bad"}),
    ),
    Case(
        "web/testdata/web_config_auth_client_san.good.yaml",
        "accepted",
        means=lambda c: c.tls is not None and c.tls.allowed_sans == frozenset({"one", "test3", "two"}),
    ),
    Case(
        "web/testdata/web_config_auth_user_list_invalid.bad.yml",
        "refused: hashedSecret too short to be a bcrypted password",
        refused="basic_auth_users: the password of user 1 is not a bcrypt hash",
    ),
    Case("web/testdata/web_config_empty.yml", "accepted", means=lambda c: c == WebConfig()),
    Case(
        "web/testdata/web_config_headers.good.yml",
        "accepted",
        means=lambda c: c.headers["X-XSS-Protection"] == "1" and c.headers["X-Frame-Options"] == "deny",
    ),
    Case(
        "web/testdata/web_config_headers_content_type_options.bad.yml",
        "refused: invalid value for X-Content-Type-Options",
        refused="http_server_config.headers: X-Content-Type-Options must be one of nosniff",
    ),
    Case(
        "web/testdata/web_config_headers_extra_header.bad.yml",
        'refused: HTTP header "Content-Type" can not be configured',
        refused="http_server_config.headers: header 1 cannot be configured",
    ),
    Case(
        "web/testdata/web_config_headers_frame_options.bad.yml",
        "refused: invalid value for X-Frame-Options",
        refused="http_server_config.headers: X-Frame-Options must be one of deny, sameorigin",
    ),
    Case("web/testdata/web_config_junk.yml", "refused: yaml", refused="web_config_junk.yml must be a mapping"),
    Case(
        "web/testdata/web_config_junk_key.yml",
        "refused: yaml (field cert_filse not found)",
        refused="tls_server_config: a field that is not one of",
    ),
    Case(
        "web/testdata/web_config_noAuth.bad.yml",
        "refused: client CA's have been configured without a Client Auth Policy",
        refused="client_ca_file: /dev/null is not a regular file",
        differs_because="same verdict, another reason: /dev/null is refused as not a regular file before any"
        " policy check (a client CA with NoClientCert is accepted here and unused)",
    ),
    Case(
        "web/testdata/web_config_noAuth.good.blocking.yml",
        "accepted",
        refused="client_auth_type RequireAndVerifyClientCert needs client_ca_file",
        differs_because=NO_CLIENT_CA,
    ),
    Case("web/testdata/web_config_noAuth.good.yml", "accepted", refused=NEEDS_CA, differs_because=NO_CLIENT_CA),
    Case(
        "web/testdata/web_config_noAuth_allCiphers.good.yml", "accepted", refused=NEEDS_CA, differs_because=NO_CLIENT_CA
    ),
    Case(
        "web/testdata/web_config_noAuth_allCurves.good.yml", "accepted", refused=NEEDS_CA, differs_because=NO_CLIENT_CA
    ),
    Case(
        "web/testdata/web_config_noAuth_certPath_empty.bad.yml",
        "refused: missing one of cert or cert_file",
        refused="cert_file must be a file path",
    ),
    Case(
        "web/testdata/web_config_noAuth_certPath_invalid.bad.yml",
        "refused: no such file",
        refused="cert_file: {dir}/somefile does not exist",
    ),
    Case(
        "web/testdata/web_config_noAuth_certPath_keyPath_empty.bad.yml",
        "refused: missing one of cert or cert_file",
        refused="client_auth_type is not one of",
    ),
    Case(
        "web/testdata/web_config_noAuth_certPath_keyPath_invalid.bad.yml",
        "refused: no such file",
        refused="cert_file: {dir}/somefile does not exist",
    ),
    Case(
        "web/testdata/web_config_noAuth_cert_empty.bad.yml",
        "refused: missing one of cert or cert_file",
        refused="tls_server_config.cert (inline PEM) cannot be honoured",
    ),
    Case(
        "web/testdata/web_config_noAuth_inventedCiphers.bad.yml",
        "refused: unknown cipher",
        refused=NEEDS_CA,
        differs_because="same verdict, another reason: " + NO_CLIENT_CA,
    ),
    Case(
        "web/testdata/web_config_noAuth_inventedCurves.bad.yml",
        "refused: unknown curve",
        refused=NEEDS_CA,
        differs_because="same verdict, another reason: " + NO_CLIENT_CA,
    ),
    Case(
        "web/testdata/web_config_noAuth_keyPath_empty.bad.yml",
        "refused: missing one of key or key_file",
        refused="key_file must be a file path",
    ),
    Case(
        "web/testdata/web_config_noAuth_keyPath_invalid.bad.yml",
        "refused: no such file",
        refused="cert_file: {dir}/server.cert does not exist",
    ),
    Case(
        "web/testdata/web_config_noAuth_key_empty.bad.yml",
        "refused: missing one of key or key_file",
        refused="tls_server_config.key (inline PEM) cannot be honoured",
    ),
    Case("web/testdata/web_config_noAuth_noHTTP2.good.yml", "accepted", refused=NEEDS_CA, differs_because=NO_CLIENT_CA),
    Case(
        "web/testdata/web_config_noAuth_noHTTP2Cipher.bad.yml",
        "refused at start: TLSConfig.CipherSuites is missing an HTTP/2-required cipher",
        refused=NEEDS_CA,
        differs_because="same verdict, another reason: " + NO_CLIENT_CA,
    ),
    Case(
        "web/testdata/web_config_noAuth_someCiphers.good.yml",
        "accepted",
        refused=NEEDS_CA,
        differs_because=NO_CLIENT_CA,
    ),
    Case(
        "web/testdata/web_config_noAuth_someCiphers_noOrder.good.yml",
        "accepted",
        refused=NEEDS_CA,
        differs_because=NO_CLIENT_CA,
    ),
    Case(
        "web/testdata/web_config_noAuth_someCurves.good.yml", "accepted", refused=NEEDS_CA, differs_because=NO_CLIENT_CA
    ),
    Case(
        "web/testdata/web_config_noAuth_tlsInline.good.yml",
        "accepted",
        refused="tls_server_config.cert (inline PEM) cannot be honoured",
        differs_because=INLINE,
    ),
    Case(
        "web/testdata/web_config_noAuth_wrongTLSVersion.bad.yml",
        "refused: unknown TLS version",
        refused=NEEDS_CA,
        differs_because="same verdict, another reason: " + NO_CLIENT_CA,
    ),
    Case(
        "web/testdata/web_config_rate_limiter_nonblocking.yaml",
        "accepted (interval 0: no limit)",
        means=lambda c: c == WebConfig(),
    ),
    Case(
        "web/testdata/web_config_rate_limiter_one_second.yaml",
        "accepted; every request answered 429 Too Many Requests (burst 0)",
        refused="rate_limit.burst 0 with an interval refuses every request",
        differs_because="a limit that admits no request is a mistake refused at start, not a server answering only 429",
    ),
    Case(
        "web/testdata/web_config_users.good.yml",
        "accepted",
        refused="basic_auth_users: the hash of user 2 has cost 18",
        differs_because=COST,
    ),
    Case(
        "web/testdata/web_config_users_noTLS.good.yml",
        "accepted",
        refused="basic_auth_users: the hash of user 2 has cost 18",
        differs_because=COST,
    ),
]


def _vendored() -> set[str]:
    return {str(path.relative_to(TOOLKIT)) for path in TOOLKIT.rglob("*") if path.suffix in (".yml", ".yaml")}


def test_every_vendored_config_file_has_its_case() -> None:
    assert len(_vendored()) == 42  # 41 from web/testdata, docs/web-config.yml
    assert sorted(_vendored()) == sorted(case.file for case in CASES)


def test_a_toolkit_good_file_refused_here_says_why() -> None:
    for case in CASES:
        toolkit_accepts = ".good." in case.file or case.toolkit.startswith("accepted")
        if case.refused is not None and toolkit_accepts:
            assert case.differs_because, case.file
        if case.refused is None:
            assert toolkit_accepts, case.file
            assert not case.differs_because, case.file


@pytest.mark.parametrize("case", CASES, ids=[case.file.rsplit("/", 1)[-1] for case in CASES])
def test_a_toolkit_example_file_is_accepted_or_refused_as_stated(case: Case) -> None:
    path = TOOLKIT / case.file
    if case.refused is None:
        config = load_web_config(str(path))
        assert case.means is not None
        assert case.means(config)
        if config.tls is not None:
            assert isinstance(_tls(config), ssl.SSLContext)
        return
    with pytest.raises(ConfigError) as refused:
        load_web_config(str(path))
    message = str(refused.value)
    assert "\n" not in message
    assert case.refused.format(dir=path.parent.resolve()) in message


def _with_client_ca(name: str, folder: Path) -> Path:
    """The file as the toolkit reads it with no client CA, now naming client_selfsigned.pem (paths kept)."""
    document = yaml.safe_load((TESTDATA / name).read_text())
    document["tls_server_config"]["client_ca_file"] = "client_selfsigned.pem"
    for cert in ("server.crt", "server.key", "client_selfsigned.pem"):
        shutil.copy(TESTDATA / cert, folder / cert)
    path = folder / name
    path.write_text(yaml.safe_dump(document))
    return path


WITH_CA: list[tuple[str, str | None, Callable[[WebConfig], bool] | None]] = [
    ("web_config_noAuth.good.yml", None, lambda c: c.tls is not None and c.tls.client_auth == ssl.CERT_OPTIONAL),
    (
        "web_config_noAuth_allCiphers.good.yml",
        None,
        lambda c: (
            c.tls is not None
            and c.tls.ciphers is not None
            and c.tls.ciphers.split(":")[:2] == ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384"]
            and len(c.tls.ciphers.split(":")) == 10
        ),
    ),
    # Go orders four curves; Python's ssl sets one (differs: docs/security.md).
    ("web_config_noAuth_allCurves.good.yml", "sets one ECDH curve", None),
    (
        "web_config_noAuth_noHTTP2.good.yml",
        None,
        lambda c: c.tls is not None and c.tls.max_version == ssl.TLSVersion.TLSv1_2 and not c.http2_asked,
    ),
    # Go refuses a TLS 1.2-only suite list under HTTP/2; HTTP/1.1 alone is served here (differs).
    (
        "web_config_noAuth_noHTTP2Cipher.bad.yml",
        None,
        lambda c: c.tls is not None and c.tls.ciphers == "ECDHE-RSA-AES256-GCM-SHA384",
    ),
    (
        "web_config_noAuth_someCiphers.good.yml",
        None,
        lambda c: (
            c.tls is not None
            and c.tls.min_version == c.tls.max_version == ssl.TLSVersion.TLSv1_2
            and c.tls.ciphers == "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384"
            and c.tls.prefer_server_ciphers
        ),
    ),
    (
        "web_config_noAuth_someCiphers_noOrder.good.yml",
        None,
        lambda c: c.tls is not None and not c.tls.prefer_server_ciphers,
    ),
    (
        "web_config_noAuth_someCurves.good.yml",
        None,
        lambda c: c.tls is not None and c.tls.min_version == ssl.TLSVersion.TLSv1_3 and c.tls.curve == "secp521r1",
    ),
    ("web_config_noAuth_inventedCiphers.bad.yml", "tls_server_config.cipher_suites: entry 1 is not one of", None),
    ("web_config_noAuth_inventedCurves.bad.yml", "tls_server_config.curve_preferences: entry 1 is not one of", None),
    ("web_config_noAuth_wrongTLSVersion.bad.yml", "min_version is not one of TLS10, TLS11, TLS12, TLS13", None),
]


@pytest.mark.parametrize(("name", "refused", "means"), WITH_CA, ids=[name for name, _, _ in WITH_CA])
def test_with_the_client_ca_named_the_rest_of_the_file_means_what_it_means_there(
    name: str, refused: str | None, means: Callable[[WebConfig], bool] | None, tmp_path: Path
) -> None:
    path = _with_client_ca(name, tmp_path)
    if refused is not None:
        with pytest.raises(ConfigError, match=refused):
            load_web_config(str(path))
        return
    config = load_web_config(str(path))
    assert means is not None
    assert means(config)
    assert isinstance(_tls(config), ssl.SSLContext)


def test_the_documented_example_beside_its_certificates_is_accepted(tmp_path: Path) -> None:
    shutil.copy(TOOLKIT / "docs" / "web-config.yml", tmp_path / "web-config.yml")
    for cert in ("server.crt", "server.key"):
        shutil.copy(TESTDATA / cert, tmp_path / cert)
    config = load_web_config(str(tmp_path / "web-config.yml"))
    assert sorted(config.basic_auth_users) == ["alice", "bob"]
    assert config.rate_limit == RateLimit(interval=1.0, burst=20)
    assert _tls(config).minimum_version == ssl.TLSVersion.TLSv1_2


def test_the_docs_table_lists_every_file_and_says_where_it_differs() -> None:
    docs = (Path(__file__).parents[3] / "docs" / "security.md").read_text()
    section = docs.split("### The toolkit's example files here", 1)[1].split("\n## ", 1)[0]
    rows = {
        line.split("|")[1].strip(" `"): line.split("|")[4].strip()
        for line in section.splitlines()
        if line.startswith("| `")
    }
    assert sorted(rows) == sorted(case.file.removeprefix("web/testdata/") for case in CASES)
    for case in CASES:
        assert (rows[case.file.removeprefix("web/testdata/")] == "same") == (not case.differs_because), case.file
