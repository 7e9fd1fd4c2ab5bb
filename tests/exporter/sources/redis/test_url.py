"""The Redis URL, validated completely at start: every deployment kind it can name, and
every mistake refused by name, with the password never shown."""

from __future__ import annotations

import subprocess
import sys

import pytest

from exporter.errors import ConfigError
from exporter.loading import load
from exporter.sources.redis.errors import InvalidRedisUrl
from exporter.sources.redis.url import RedisKind, RedisTarget, parse_redis_url

SECRET = "Zq8Wv3Kt"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://r", RedisTarget(RedisKind.STANDALONE, False, (("r", 6379),))),
        ("redis://r:7000/3", RedisTarget(RedisKind.STANDALONE, False, (("r", 7000),), db=3)),
        ("redis://r/", RedisTarget(RedisKind.STANDALONE, False, (("r", 6379),))),
        ("redis://r?db=2", RedisTarget(RedisKind.STANDALONE, False, (("r", 6379),), db=2)),
        (
            f"rediss://app:{SECRET}@[::1]:6380/1",
            RedisTarget(RedisKind.STANDALONE, True, (("::1", 6380),), username="app", password=SECRET, db=1),
        ),
        (f"redis://:{SECRET}@r", RedisTarget(RedisKind.STANDALONE, False, (("r", 6379),), password=SECRET)),
        (
            "unix:///run/redis/redis.sock?db=4",
            RedisTarget(RedisKind.STANDALONE, False, (), socket_path="/run/redis/redis.sock", db=4),
        ),
        (
            "redis+sentinel://s1,s2:26380,[::1]/mymaster",
            RedisTarget(
                RedisKind.SENTINEL,
                False,
                (("s1", 26379), ("s2", 26380), ("::1", 26379)),
                service_name="mymaster",
            ),
        ),
        (
            f"rediss+sentinel://app:{SECRET}@s1:26379/my%20master/2?sentinel_username=watch&sentinel_password=p%40ss",
            RedisTarget(
                RedisKind.SENTINEL,
                True,
                (("s1", 26379),),
                username="app",
                password=SECRET,
                db=2,
                service_name="my master",
                sentinel_username="watch",
                sentinel_password="p@ss",
            ),
        ),
        ("redis+cluster://n1:7000,n2:7001", RedisTarget(RedisKind.CLUSTER, False, (("n1", 7000), ("n2", 7001)))),
        ("rediss+cluster://n1/0", RedisTarget(RedisKind.CLUSTER, True, (("n1", 6379),))),
    ],
)
def test_every_deployment_kind_parses(url: str, expected: RedisTarget) -> None:
    assert parse_redis_url(url) == expected
    assert SECRET not in repr(parse_redis_url(url))


@pytest.mark.parametrize(
    ("url", "parameter", "words"),
    [
        ("redis://r/abc", "db", "the path must be a database number"),
        ("redis://r?db=x", "db", "?db= must be a database number"),
        ("redis://r/1?db=2", "db", "the path names database 1 and ?db= names 2"),
        ("redis://r?socket_timeout=abc", "socket_timeout", "timeouts come from --deadline"),
        ("redis://r?socket_connect_timeout=1", "socket_connect_timeout", "timeouts come from --deadline"),
        ("rediss://r?ssl_cert_reqs=none", "ssl_cert_reqs", "--redis.tls-insecure-skip-verify"),
        ("rediss://r?ssl_ca_certs=/ca.pem", "ssl_ca_certs", "--redis.tls-ca-file"),
        ("redis://r?sentinel=mymaster", "sentinel", "unknown parameter 'sentinel' (known here: db)"),
        (f"redis://r?password={SECRET}", "password", "give the credentials as redis://user:password@host"),
        ("redis://r?sentinel_password=x", "sentinel_password", "for redis+sentinel:// URLs only"),
        ("redis://r?db=1&db=2", "db", "parameter 'db' is given twice"),
        (f"redis+sentinel://:{SECRET}@s1?foo={SECRET}", "foo", "known here: db, sentinel_username, sentinel_password"),
    ],
)
def test_a_bad_parameter_is_refused_by_name(url: str, parameter: str, words: str) -> None:
    with pytest.raises(InvalidRedisUrl) as refused:
        parse_redis_url(url)
    assert refused.value.parameter == parameter
    assert words in str(refused.value)
    assert SECRET not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://r", "the scheme must be one of redis://, rediss://, unix://, redis+sentinel://"),
        ("redis://r1,r2", "names one server; for several hosts use redis+sentinel://"),
        ("redis://r/1/2", "must be /DB"),
        ("redis://r:99999", "host 1: the port is not a number from 1 to 65535"),
        ("redis://r,:1", "host 2 has a port but no name"),
        ("redis://r,,s", "host 2 is empty"),
        ("redis+sentinel://s1", "the path must name the service the sentinels monitor"),
        ("redis+sentinel://s1/m/1/2", "must be /SERVICE_NAME[/DB]"),
        ("redis+sentinel://s1/m/x", "the database after the service name must be a database number"),
        ("redis+cluster://n1/3", "a Redis Cluster has database 0 only"),
        ("redis+cluster://n1?db=1", "a Redis Cluster has database 0 only"),
        ("unix://", "unix:// needs the socket's path"),
        ("redis://r#frag", "no #fragment"),
        (f"redis://u:{SECRET}/x@r", "percent-encode"),
        (f"redis://u:{SECRET}#x@r", "percent-encode"),
        # What the resolver raises UnicodeError on, refused before anything resolves it.
        ("redis://a..b/0", "host 1: not a host name"),
        ("redis+sentinel://s1," + "a" * 64 + "/m", "host 2: not a host name"),
        ("redis+cluster://n1,%00", "host 2: a host name holds a NUL character"),
    ],
)
def test_a_bad_url_is_refused_without_its_password(url: str, words: str) -> None:
    with pytest.raises(InvalidRedisUrl) as refused:
        parse_redis_url(url)
    assert words in str(refused.value)
    assert SECRET not in str(refused.value)


def test_a_sentinel_password_in_the_query_is_never_shown() -> None:
    url = f"redis+sentinel://s1/m?sentinel_password={SECRET}&nope=1"
    with pytest.raises(ConfigError) as refused:
        load({"redis_url": url}, {})
    assert "redis+sentinel://s1/m is not a valid URL" in str(refused.value)
    assert SECRET not in str(refused.value)


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1/abc", "redis://127.0.0.1?db=x", "redis://127.0.0.1?socket_timeout=abc"]
)
def test_check_config_and_serve_refuse_alike(url: str) -> None:
    """Both commands load the settings through the one function that parses the URL."""
    outputs = []
    for command in ("check-config", "serve"):
        done = subprocess.run(
            [sys.executable, "-m", "exporter", command, "--redis.url", url, "--web.listen-address", "127.0.0.1:0"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert done.stderr.count("redis://127.0.0.1") == 1, done.stderr
        outputs.append(done.stderr)
    assert outputs[0] == outputs[1]
