"""HTTP through the real process: oversized requests are refused, slow clients
are cut, query strings change nothing, and the server keeps serving; a database
that refuses the password is named in the log, the password never is."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from devkit.process import RunningProcess, exporter_process
from tests.platform import EXPORTER_PASSWORD, Platform
from tests.scrapes import parse
from tests.waits import wait_until_sync

SCRAPE_TIMEOUT = 3.0
HEADERS = {"X-Prometheus-Scrape-Timeout-Seconds": f"{SCRAPE_TIMEOUT:g}"}
# Well past the server's keep-alive timeout (15 s in exporter/http/server.py): a slow client must be cut by then.
SLOW_CLIENT_PATIENCE = 25.0


@pytest.fixture(scope="module")
def running(module_platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProcess]:
    args = ["--database.url", module_platform.exporter_url, "--ttl", "2", "--deadline", "1"]
    with exporter_process(args, tmp_path_factory.mktemp("hardening")) as process:
        yield process


def raw_exchange(port: int, payload: bytes, timeout: float = 10.0) -> bytes:
    """Sends `payload` and reads until the server closes or answers one response head;
    b"" when the server closed (or reset) without answering."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        received = b""
        try:
            sock.sendall(payload)
            while b"\r\n\r\n" not in received:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass
        return received


def assert_refused(answer: bytes) -> None:
    if answer:
        status = int(answer.split(b" ", 2)[1])
        assert 400 <= status < 500, f"an oversized request got {answer.splitlines()[0]!r}"


def assert_still_serving(running: RunningProcess) -> None:
    response = httpx.get(running.url + "/metrics", headers=HEADERS, timeout=SCRAPE_TIMEOUT)
    assert response.status_code == 200
    assert parse(response.content).measured("dlq") == 1


@pytest.mark.parametrize("size", [16 * 1024, 1024 * 1024], ids=["16KiB", "1MiB"])
def test_an_oversized_request_line_is_refused(running: RunningProcess, size: int) -> None:
    request = b"GET /metrics?" + b"a" * size + b" HTTP/1.1\r\nHost: exporter\r\n\r\n"
    assert_refused(raw_exchange(running.port, request))
    assert_still_serving(running)


@pytest.mark.parametrize(
    ("count", "size"), [(1, 64 * 1024), (1, 1024 * 1024), (2000, 100)], ids=["one-64KiB", "one-1MiB", "2000-small"]
)
def test_oversized_headers_are_refused(running: RunningProcess, count: int, size: int) -> None:
    headers = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"h" * size) for i in range(count))
    request = b"GET /metrics HTTP/1.1\r\nHost: exporter\r\n" + headers + b"\r\n"
    assert_refused(raw_exchange(running.port, request))
    assert_still_serving(running)


@pytest.mark.parametrize("query", ["?%00=%ZZ&;;&debug", "?signals=dlq&ttl=0", "?" + "x=1&" * 500])
def test_query_strings_change_nothing(running: RunningProcess, query: str) -> None:
    plain = httpx.get(running.url + "/metrics", headers=HEADERS, timeout=SCRAPE_TIMEOUT)
    queried = httpx.get(running.url + "/metrics" + query, headers=HEADERS, timeout=SCRAPE_TIMEOUT)
    assert queried.status_code == 200
    assert set(parse(queried.content).values) == set(parse(plain.content).values)


def test_slow_clients_are_cut(running: RunningProcess) -> None:
    """Slowloris: a client that sends half a request line, and one that sends nothing,
    must not hold a connection for ever."""
    half = socket.create_connection(("127.0.0.1", running.port))
    silent = socket.create_connection(("127.0.0.1", running.port))
    try:
        half.sendall(b"GET /metr")
        closed: dict[str, float | None] = {"half request line": None, "nothing sent": None}
        started = time.monotonic()
        for sock in (half, silent):
            sock.settimeout(0.2)
        while time.monotonic() - started < SLOW_CLIENT_PATIENCE and None in closed.values():
            for name, sock in (("half request line", half), ("nothing sent", silent)):
                if closed[name] is not None:
                    continue
                try:
                    if sock.recv(1024) == b"":
                        closed[name] = time.monotonic() - started
                except TimeoutError:
                    pass
                except ConnectionResetError:
                    closed[name] = time.monotonic() - started
        # Meanwhile the server serves others.
        assert_still_serving(running)
        assert None not in closed.values(), f"still open after {SLOW_CLIENT_PATIENCE:g} s: {closed}"
    finally:
        half.close()
        silent.close()


def test_wrong_password_over_http_is_named_and_never_logged(module_platform: Platform, tmp_path: Path) -> None:
    wrong = "Not-The-Password-42"
    url = module_platform.exporter_url.replace(EXPORTER_PASSWORD, wrong)
    with exporter_process(["--database.url", url, "--ttl", "2", "--deadline", "1"], tmp_path) as process:
        started = time.monotonic()
        response = httpx.get(process.url + "/metrics", headers=HEADERS, timeout=SCRAPE_TIMEOUT + 2)
        assert time.monotonic() - started < SCRAPE_TIMEOUT
        assert response.status_code == 200
        page = parse(response.content)
        assert page.measured("dlq") == 0
        assert page.measured("audit_chain") == 0
        wait_until_sync(lambda: "authentication_failed" in process.log(), 30)
        log = process.log()
    assert "authentication_failed" in log
    assert wrong not in log
    assert EXPORTER_PASSWORD not in log


def test_unknown_host_over_http_is_named_and_never_logged(module_platform: Platform, tmp_path: Path) -> None:
    url = f"postgresql://orpycamcp_exporter:{EXPORTER_PASSWORD}@no-such-host.invalid:5432/{module_platform.database}"
    with exporter_process(["--database.url", url, "--ttl", "2", "--deadline", "1"], tmp_path) as process:
        started = time.monotonic()
        response = httpx.get(process.url + "/metrics", headers=HEADERS, timeout=SCRAPE_TIMEOUT + 2)
        assert time.monotonic() - started < SCRAPE_TIMEOUT
        assert parse(response.content).measured("dlq") == 0
        wait_until_sync(lambda: "connection_error" in process.log(), 30)
        log = process.log()
    assert "connection_error" in log
    assert EXPORTER_PASSWORD not in log
