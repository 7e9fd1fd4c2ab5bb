"""Hostile database and Redis URLs (passwords holding @ : / % # ?, left
unencoded or encoded, empty users, IPv6 hosts, a password in the query) fed to
`serve`, `check-config` and `diagnose`: no fragment of the password appears in
anything printed or logged, whatever the command makes of the URL."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from devkit.servers import RedisServer, free_port
from exporter.sources.postgres.dsn import redact as redact_url
from tests.platform import Platform

PASSWORD = "Qx7@Zkq:9wB/Wvj%Jh2#Ypf?Lmz"
PLAIN = "Rt5Kpm9ZxVb"
# Every run of letters and digits of the passwords, as printed or percent-encoded.
FRAGMENTS = tuple(re.findall(r"[A-Za-z0-9]{3,}", PASSWORD + " " + PLAIN))
ENCODED = urllib.parse.quote(PASSWORD, safe="")


def hostile_urls(platform: Platform, redis: RedisServer) -> dict[str, tuple[str, str]]:
    """name -> (option, URL)."""
    pg = platform.server.port
    db = platform.database
    return {
        "unencoded password": ("--database.url", f"postgresql://orpycamcp_exporter:{PASSWORD}@127.0.0.1:{pg}/{db}"),
        "unencoded, no port": ("--database.url", f"postgresql://u:{PASSWORD}@localhost/{db}"),
        "encoded password": ("--database.url", f"postgresql://orpycamcp_exporter:{ENCODED}@127.0.0.1:{pg}/{db}"),
        "empty user": ("--database.url", f"postgresql://:{PLAIN}@127.0.0.1:{pg}/{db}"),
        "ipv6 host": ("--database.url", f"postgresql://orpycamcp_exporter:{ENCODED}@[::1]:{pg}/{db}"),
        "password in the query": (
            "--database.url",
            f"postgresql://orpycamcp_exporter@127.0.0.1:{pg}/{db}?password={ENCODED}",
        ),
        "password as the user": ("--database.url", f"postgresql://{PASSWORD}@127.0.0.1:{pg}/{db}"),
        "unencoded password in the query": (
            "--database.url",
            f"postgresql://orpycamcp_exporter@127.0.0.1:{pg}/{db}?password={PASSWORD}",
        ),
        "unencoded password in the query, & for #": (
            "--database.url",
            f"postgresql://orpycamcp_exporter@127.0.0.1:{pg}/{db}?password={PASSWORD.replace('#', '&')}",
        ),
        "redis unencoded password in the query": (
            "--redis.url",
            f"redis://127.0.0.1:{redis.port}/0?password={PASSWORD}",
        ),
        "redis unencoded": ("--redis.url", f"redis://:{PASSWORD}@127.0.0.1:{redis.port}/0"),
        "redis encoded, ipv6": ("--redis.url", f"redis://default:{ENCODED}@[::1]:{redis.port}/0"),
    }


def assert_no_fragment(text: str, where: str) -> None:
    leaked = [fragment for fragment in FRAGMENTS if fragment in text]
    assert not leaked, f"{where} shows {leaked}:\n{text}"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "exporter", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def serve_once(option: str, url: str, log_format: str) -> str:
    """`serve` with debug logs: started, scraped once (so every measurement logs), stopped;
    or refused at start. Everything it printed."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "exporter",
        "serve",
        option,
        url,
        "--web.listen-address",
        f"127.0.0.1:{port}",
        "--deadline",
        "2",
        "--log.level",
        "debug",
        "--log.format",
        log_format,
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60  # a loaded machine starts Python slowly
        while process.poll() is None and time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            assert process.poll() is not None, "serve neither started nor exited"
    finally:
        if process.poll() is None:
            process.terminate()
        output, _ = process.communicate(timeout=20)
    return output


@pytest.mark.parametrize(
    "name",
    [
        "unencoded password",
        "unencoded, no port",
        "encoded password",
        "empty user",
        "ipv6 host",
        "password in the query",
        "password as the user",
        "unencoded password in the query",
        "unencoded password in the query, & for #",
        "redis unencoded password in the query",
        "redis unencoded",
        "redis encoded, ipv6",
    ],
)
def test_no_command_prints_the_password(module_platform: Platform, redis: RedisServer, name: str) -> None:
    option, url = hostile_urls(module_platform, redis)[name]
    assert_no_fragment(redact_url(url), "redact_url")
    # The four commands beside each other: each mostly waits (its start, a 2 s deadline).
    with ThreadPoolExecutor(max_workers=4) as commands:
        checking = commands.submit(run, "check-config", option, url)
        diagnosing = commands.submit(run, "diagnose", option, url, "--deadline", "2")
        serving = {form: commands.submit(serve_once, option, url, form) for form in ("text", "json")}
    checked = checking.result()
    assert checked.returncode in (0, 2)
    assert_no_fragment(checked.stdout + checked.stderr, "check-config")
    diagnosed = diagnosing.result()
    assert diagnosed.returncode in (1, 2)
    assert "Traceback" not in diagnosed.stdout + diagnosed.stderr
    assert_no_fragment(diagnosed.stdout + diagnosed.stderr, "diagnose")
    for log_format, served in serving.items():
        assert_no_fragment(served.result(), f"serve ({log_format})")


def test_an_unencoded_password_is_refused_with_the_remedy() -> None:
    done = run("check-config", "--database.url", f"postgresql://exp:{PASSWORD}@db.internal:5432/platform")
    assert done.returncode == 2
    assert "postgresql://(rest not shown: it does not parse one way)" in done.stderr
    assert "percent-encode" in done.stderr
    assert_no_fragment(done.stderr, "check-config")
