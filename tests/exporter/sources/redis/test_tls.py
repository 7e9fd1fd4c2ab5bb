"""TLS to Redis, given by the --redis.tls-* flags: files checked at start, the
server's certificate and host name verified, a client certificate shown when
the server asks for one. Real redis-server with certificates made here."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trustme
from redis.asyncio import Redis

from devkit.redis_tls import TlsFiles, TlsRedis, issue, start_tls_redis
from devkit.servers import free_port
from exporter.errors import ConfigError
from exporter.loading import load
from exporter.reasons import Reason
from exporter.sources.redis.tls import RedisTls
from tests.redis_streams import counts_of, expected_values, failure_of, measure_streams, streams_source, write_backlog

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def pki(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> dict[str, TlsFiles]:
    directory = tmp_path_factory.mktemp("pki")
    return {
        "server": issue(ca, directory, "server", "127.0.0.1", "localhost"),
        "client": issue(ca, directory, "client", "orpycamcp-exporter"),
        "elsewhere": issue(ca, directory, "elsewhere", "redis.example.org"),
        "stranger": issue(trustme.CA(), directory, "stranger", "127.0.0.1"),
    }


@pytest.fixture(scope="module")
def tls_redis(pki: dict[str, TlsFiles]) -> Iterator[TlsRedis]:
    server = start_tls_redis(pki["server"], auth_clients=False)
    yield server
    server.remove()


@pytest.fixture
async def plain(tls_redis: TlsRedis) -> AsyncIterator[Redis]:
    client = Redis(port=tls_redis.port, decode_responses=True)
    await client.flushall()
    await write_backlog(client, 3)
    yield client
    await client.aclose()


async def test_a_private_ca_given_by_flag_reads_exact_values(
    tls_redis: TlsRedis, plain: Redis, pki: dict[str, TlsFiles]
) -> None:
    source = streams_source(tls_redis.tls_url, RedisTls(ca_file=str(pki["server"].ca)))
    try:
        outcome = await measure_streams(source)
        assert counts_of(outcome) == await expected_values(plain)
    finally:
        await source.close()


async def test_a_certificate_of_another_ca_is_refused(
    tls_redis: TlsRedis, plain: Redis, pki: dict[str, TlsFiles]
) -> None:
    source = streams_source(tls_redis.tls_url, RedisTls(ca_file=str(pki["stranger"].ca)))
    try:
        failure = failure_of(await measure_streams(source))
        assert failure.reason is Reason.CONNECTION_ERROR
        assert "CERTIFICATE_VERIFY_FAILED" in failure.detail
    finally:
        await source.close()


async def test_a_host_name_the_certificate_does_not_name_is_refused_unless_told(
    pki: dict[str, TlsFiles], tmp_path: Path
) -> None:
    server = start_tls_redis(pki["elsewhere"])
    try:
        plain = Redis(port=server.port, decode_responses=True)
        await write_backlog(plain, 2)
        checked = streams_source(server.tls_url, RedisTls(ca_file=str(pki["elsewhere"].ca)))
        unchecked = streams_source(server.tls_url, RedisTls(insecure_skip_verify=True))
        try:
            failure = failure_of(await measure_streams(checked))
            assert failure.reason is Reason.CONNECTION_ERROR
            assert "IP address mismatch" in failure.detail
            assert counts_of(await measure_streams(unchecked)) == await expected_values(plain)
        finally:
            await checked.close()
            await unchecked.close()
            await plain.aclose()
    finally:
        server.remove()


async def test_a_server_that_requires_a_client_certificate_gets_the_flags_one(pki: dict[str, TlsFiles]) -> None:
    server = start_tls_redis(pki["server"], auth_clients=True)
    try:
        plain = Redis(port=server.port, decode_responses=True)
        await write_backlog(plain, 4)
        ca = str(pki["server"].ca)
        anonymous = streams_source(server.tls_url, RedisTls(ca_file=ca))
        known = streams_source(
            server.tls_url, RedisTls(ca_file=ca, cert_file=str(pki["client"].cert), key_file=str(pki["client"].key))
        )
        try:
            refused = failure_of(await measure_streams(anonymous))
            assert refused.reason is Reason.CONNECTION_ERROR
            assert counts_of(await measure_streams(known)) == await expected_values(plain)
        finally:
            await anonymous.close()
            await known.close()
            await plain.aclose()
    finally:
        server.remove()


URL = "rediss://127.0.0.1:6380/0"


@pytest.mark.parametrize(
    ("values", "flag", "words"),
    [
        ({"redis_tls_ca_file": "/nonexistent/ca.pem"}, "--redis.tls-ca-file", "/nonexistent/ca.pem: cannot read it"),
        ({"redis_tls_ca_file": "{garbage}"}, "--redis.tls-ca-file", "not a PEM CA certificate"),
        ({"redis_tls_cert_file": "{garbage}"}, "--redis.tls-cert-file", "not a PEM certificate"),
        (
            {"redis_tls_cert_file": "{client_cert}", "redis_tls_key_file": "/nonexistent/key.pem"},
            "--redis.tls-key-file",
            "/nonexistent/key.pem: cannot read it",
        ),
        (
            {"redis_tls_cert_file": "{client_cert}", "redis_tls_key_file": "{other_key}"},
            "--redis.tls-cert-file",
            "not a PEM certificate with the key",
        ),
        ({"redis_tls_key_file": "{client_key}"}, "--redis.tls-key-file", "needs its certificate"),
        ({"redis_tls_insecure_skip_verify": "maybe"}, "--redis.tls-insecure-skip-verify", "'maybe' is not one of"),
    ],
)
def test_a_missing_or_bad_tls_file_is_refused_at_start(
    values: dict[str, str], flag: str, words: str, pki: dict[str, TlsFiles], tmp_path: Path
) -> None:
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    paths = {
        "{garbage}": str(garbage),
        "{client_cert}": str(pki["client"].cert),
        "{client_key}": str(pki["client"].key),
        "{other_key}": str(pki["server"].key),
    }
    given = {name: paths.get(value, value) for name, value in values.items()}
    with pytest.raises(ConfigError) as refused:
        load({"redis_url": URL, **given}, {})
    assert refused.value.setting.startswith(flag)
    assert words in str(refused.value)


def test_tls_flags_need_a_tls_url(pki: dict[str, TlsFiles]) -> None:
    with pytest.raises(ConfigError, match="needs a rediss:// URL"):
        load({"redis_url": "redis://127.0.0.1:6379/0", "redis_tls_ca_file": str(pki["server"].ca)}, {})
    with pytest.raises(ConfigError, match="needs a rediss:// URL"):
        load({"redis_url": "redis://127.0.0.1:6379/0"}, {"ORPYCAMCP_REDIS_TLS_INSECURE_SKIP_VERIFY": "true"})


def test_the_flags_and_their_environment_variables_load(pki: dict[str, TlsFiles]) -> None:
    files = pki["client"]
    settings = load(
        {"redis_url": URL, "redis_tls_ca_file": str(pki["server"].ca)},
        {"ORPYCAMCP_REDIS_TLS_CERT_FILE": str(files.cert), "ORPYCAMCP_REDIS_TLS_KEY_FILE": str(files.key)},
    )
    assert settings.redis_tls == RedisTls(str(pki["server"].ca), str(files.cert), str(files.key), False)


def test_check_config_refuses_a_missing_ca_file_with_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "check-config", "--redis.url", URL, "--redis.tls-ca-file", "/nope/ca.pem"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "orpycamcp-exporter: invalid setting --redis.tls-ca-file (ORPYCAMCP_REDIS_TLS_CA_FILE):"
        " /nope/ca.pem: cannot read it: No such file or directory"
    )


def test_skipping_verification_is_a_warning_at_start(tls_redis: TlsRedis) -> None:
    command = [
        sys.executable,
        "-m",
        "exporter",
        "serve",
        "--redis.url",
        tls_redis.tls_url,
        "--redis.tls-insecure-skip-verify",
        "true",
        "--web.listen-address",
        f"127.0.0.1:{free_port()}",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    hung = False
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "--redis.tls-insecure-skip-verify" in line:
                break
    finally:
        # Still starting: a SIGTERM now stops it all the same, never waits for a SIGKILL.
        process.terminate()
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            hung = True
            process.kill()
            process.communicate()
    assert not hung, "SIGTERM during start did not stop the exporter"
    assert "WARNING" in lines[-1] or '"warning"' in lines[-1], lines
    assert "accepts any certificate and host name" in lines[-1]
