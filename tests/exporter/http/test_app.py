"""HTTP through a real uvicorn process."""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from devkit.process import RunningProcess, exporter_process
from registry import TAIL_FAMILIES
from tests.platform import Platform
from tests.scrapes import parse


@pytest.fixture(scope="module")
def running(module_platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProcess]:
    with exporter_process(["--database.url", module_platform.exporter_url], tmp_path_factory.mktemp("app")) as process:
        yield process


def test_metrics_content_type_and_body(running: RunningProcess) -> None:
    response = httpx.get(running.url + "/metrics", headers={"Accept-Encoding": "identity"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "content-encoding" not in response.headers
    page = parse(response.content)
    assert page.measured("dlq") == 1
    assert page.get("orpycamcp_exporter_build_info", version="0.1.0") == 1


def without_open_connections(page: bytes) -> bytes:
    """The page less what may differ between two requests: its open-connections
    sample, and the process samples (read again once a second)."""
    return b"\n".join(
        line
        for line in page.split(b"\n")
        if not line.startswith((b"orpycamcp_exporter_http_connections ", b"process_"))
    )


def test_gzip_when_accepted(running: RunningProcess) -> None:
    plain = httpx.get(running.url + "/metrics", headers={"Accept-Encoding": "identity"})
    raw = httpx.get(running.url + "/metrics", headers={"Accept-Encoding": "gzip"}, follow_redirects=False)
    assert raw.headers["content-encoding"] == "gzip"
    assert raw.headers["vary"] == "Accept-Encoding"
    # httpx decodes gzip for us; the decoded page equals the plain one.
    assert without_open_connections(raw.content) == without_open_connections(plain.content)
    with httpx.stream("GET", running.url + "/metrics", headers={"Accept-Encoding": "gzip"}) as streamed:
        compressed = b"".join(streamed.iter_raw())
    assert without_open_connections(gzip.decompress(compressed)) == without_open_connections(plain.content)


def test_the_page_ends_with_the_connection_and_process_families(running: RunningProcess) -> None:
    with httpx.Client(base_url=running.url) as client:
        for encoding in ("identity", "gzip"):
            response = client.get("/metrics", headers={"Accept-Encoding": encoding})
            text = response.content.decode()
            tail = text[text.index("# HELP orpycamcp_exporter_http_connections ") :]
            families = [line.split()[2] for line in tail.splitlines() if line.startswith("# TYPE ")]
            assert families == [family.name for family in TAIL_FAMILIES]
            page = parse(response.content)
            assert page.get("orpycamcp_exporter_http_connections") is not None
            assert page.get("orpycamcp_exporter_http_connections") >= 1  # type: ignore[operator]
            assert page.get("orpycamcp_exporter_http_connections_shed_total") == 0
            # The exporter's own process, not the test's.
            start = page.get("process_start_time_seconds")
            assert start is not None
            assert time.time() - 600 < start <= time.time()
            assert page.get("process_open_fds") >= 3  # type: ignore[operator]


def test_gzip_refused_with_q_zero(running: RunningProcess) -> None:
    response = httpx.get(running.url + "/metrics", headers={"Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in response.headers


def test_head_has_headers_and_no_body(running: RunningProcess) -> None:
    response = httpx.head(running.url + "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert response.content == b""


@pytest.mark.parametrize("path", ["/", "/metrics", "/-/healthy", "/-/ready", "/nope"])
@pytest.mark.parametrize(
    "headers",
    [
        {"X-Forwarded-For": "10.0.0.1"},
        {"x-forwarded-for": "10.0.0.1"},
        {"Forwarded": "for=10.0.0.1"},
        {"X-REAL-IP": "10.0.0.1"},
        {"X-Real-Ip": "10.0.0.1"},
    ],
)
def test_proxy_headers_get_404_on_every_path(running: RunningProcess, path: str, headers: dict[str, str]) -> None:
    response = httpx.get(running.url + path, headers=headers)
    assert response.status_code == 404


def test_repeated_proxy_header_gets_404(running: RunningProcess) -> None:
    response = httpx.get(running.url + "/metrics", headers=[("X-Forwarded-For", "a"), ("X-Forwarded-For", "b")])
    assert response.status_code == 404


def test_health_endpoints_and_landing_page(running: RunningProcess) -> None:
    assert httpx.get(running.url + "/-/healthy").status_code == 200
    assert httpx.get(running.url + "/-/ready").status_code == 200
    landing = httpx.get(running.url + "/")
    assert landing.status_code == 200
    assert 'href="/metrics"' in landing.text


def test_unknown_path_and_methods(running: RunningProcess) -> None:
    assert httpx.get(running.url + "/metricz").status_code == 404
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        response = httpx.request(method, running.url + "/metrics")
        assert response.status_code == 405, method
        assert "GET" in response.headers["allow"]


def test_query_string_is_ignored(running: RunningProcess) -> None:
    assert httpx.get(running.url + "/metrics?name[]=x&debug=1").status_code == 200


def test_health_does_not_depend_on_the_database(tmp_path: Path) -> None:
    dead = "postgresql://orpycamcp_exporter:pw@127.0.0.1:9/nowhere"
    with exporter_process(["--database.url", dead, "--deadline", "1", "--ttl", "2"], tmp_path) as process:
        assert httpx.get(process.url + "/-/healthy").status_code == 200
        assert httpx.get(process.url + "/-/ready").status_code == 200
        response = httpx.get(process.url + "/metrics")
        assert response.status_code == 200
        page = parse(response.content)
        assert page.measured("dlq") == 0
        assert "pw@" not in process.log()
