"""A trusted reverse proxy (--web.trusted-proxies): a real nginx in front of the
exporter on loopback, over HTTP and over TLS, with and without the flag; and the
option's parser, the peer's address and the refusal log on their own."""

from __future__ import annotations

import logging
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devkit.process import RunningProcess, exporter_process, running_process
from devkit.tools import tool
from exporter.http.proxies import RefusalLog, TrustedProxies, is_trusted, peer_address
from exporter.options import Refused
from exporter.tools.throwaway import free_port
from tests.hypotheses import examples
from tests.pki import write_pki

# Nothing listens there: the page says every signal is unmeasured, which is all a proxy test needs.
DATABASE = ["--database.url", "postgresql://u:p@127.0.0.1:9/db"]
HINT = "set --web.trusted-proxies 127.0.0.1/32"
NGINX_CONF = """\
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass {upstream};
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Real-IP $remote_addr;
            {tls}
        }}
    }}
}}
"""
UPSTREAM_TLS = "proxy_ssl_trusted_certificate {ca}; proxy_ssl_verify on; proxy_ssl_name localhost;"


@contextmanager
def nginx_in_front(upstream: str, root: Path, tls: str = "") -> Iterator[RunningProcess]:
    """Debian's nginx on a loopback port of its own, forwarding everything to `upstream`."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = root / "nginx.conf"
    config.write_text(NGINX_CONF.format(root=root, port=port, upstream=upstream, tls=tls), encoding="utf-8")
    command = [tool("nginx"), "-p", str(root), "-c", str(config), "-e", str(root / "error.log"), "-g", "daemon off;"]
    with running_process(command, port, root / "nginx.out") as running:
        yield running


def _refusals(process: RunningProcess) -> list[str]:
    return [line for line in process.log().splitlines() if "was answered 404" in line]


def test_without_the_flag_a_scrape_through_nginx_is_refused_and_logged_once(tmp_path: Path) -> None:
    with exporter_process(DATABASE, tmp_path) as exporter, nginx_in_front(exporter.url, tmp_path / "nginx") as proxy:
        for _ in range(3):
            assert httpx.get(proxy.url + "/metrics", timeout=10).status_code == 404
        # Direct, the same exporter answers.
        assert httpx.get(exporter.url + "/metrics", timeout=10).status_code == 200
        refusals = _refusals(exporter)
    assert len(refusals) == 1, refusals
    assert "a request from 127.0.0.1 carried x-forwarded-for" in refusals[0]
    assert HINT in refusals[0]


def test_with_the_flag_a_scrape_through_nginx_is_answered(tmp_path: Path) -> None:
    args = [*DATABASE, "--web.trusted-proxies", "127.0.0.1/32,::1"]
    with exporter_process(args, tmp_path) as exporter, nginx_in_front(exporter.url, tmp_path / "nginx") as proxy:
        response = httpx.get(proxy.url + "/metrics", timeout=10)
        assert response.status_code == 200, response.text
        assert 'orpycamcp_signal_measured{signal="dlq"} 0' in response.text
        assert "forwarded requests answered from 127.0.0.1/32,::1/128" in exporter.log()
        assert _refusals(exporter) == []


def test_a_proxy_outside_the_trusted_networks_is_refused(tmp_path: Path) -> None:
    args = [*DATABASE, "--web.trusted-proxies", "10.0.0.0/8"]
    with exporter_process(args, tmp_path) as exporter, nginx_in_front(exporter.url, tmp_path / "nginx") as proxy:
        assert httpx.get(proxy.url + "/metrics", timeout=10).status_code == 404
        assert len(_refusals(exporter)) == 1


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pki")
    write_pki(folder)
    (folder / "web.yml").write_text(
        f"tls_server_config:\n  cert_file: {folder / 'server.crt'}\n  key_file: {folder / 'server.key'}\n"
    )
    return folder


@pytest.mark.parametrize("trusted", [True, False])
def test_nginx_over_tls_to_the_exporter(tmp_path: Path, pki: Path, trusted: bool) -> None:
    args = [*DATABASE, "--web.config.file", str(pki / "web.yml")]
    args += ["--web.trusted-proxies", "127.0.0.1/32"] if trusted else []
    ready: dict[str, object] = {"verify": ssl.create_default_context(cafile=str(pki / "ca.crt"))}
    with exporter_process(args, tmp_path, scheme="https", ready_kwargs=ready) as exporter:
        upstream = f"https://127.0.0.1:{exporter.port}"
        tls = UPSTREAM_TLS.format(ca=pki / "ca.crt")
        with nginx_in_front(upstream, tmp_path / "nginx", tls) as proxy:
            response = httpx.get(proxy.url + "/metrics", timeout=10)
        assert response.status_code == (200 if trusted else 404), response.text
        assert ("orpycamcp_signal_measured" in response.text) is trusted
        assert len(_refusals(exporter)) == (0 if trusted else 1)


# --- the parts ------------------------------------------------------------------------------


def test_the_option_reads_addresses_and_networks() -> None:
    parse = TrustedProxies()
    assert parse("127.0.0.1/32, ::1 ,10.0.0.0/8", {}) == (
        ip_network("127.0.0.1/32"),
        ip_network("::1/128"),
        ip_network("10.0.0.0/8"),
    )
    for raw in ("", " , ", "10.0.0.1/8", "localhost", "127.0.0.1/33", "::1/129"):
        with pytest.raises(Refused):
            parse(raw, {})


@settings(max_examples=examples(200, 2000))
@given(st.text(max_size=200))
def test_any_text_is_read_or_refused_never_an_error(raw: str) -> None:
    """Hostile text is refused with a problem of bounded length, never another exception."""
    problem = ""
    try:
        networks = TrustedProxies()(raw, {})
    except Refused as exc:
        problem = exc.problem
    else:
        assert networks
    assert len(problem) < 300


@settings(max_examples=examples(100, 1000))
@given(st.lists(st.ip_addresses(), min_size=1, max_size=8))
def test_every_list_of_addresses_is_read_as_single_address_networks(addresses: list[IPv4Address | IPv6Address]) -> None:
    networks = TrustedProxies()(" , ".join(map(str, addresses)), {})
    assert [(net.network_address, net.num_addresses) for net in networks] == [(a, 1) for a in addresses]


@pytest.mark.parametrize(
    ("client", "peer"),
    [
        (("127.0.0.1", 5000), IPv4Address("127.0.0.1")),
        (("::ffff:127.0.0.1", 5000), IPv4Address("127.0.0.1")),
        (("::1", 5000), IPv6Address("::1")),
        (None, None),
        (("/run/exporter.sock", 0), None),
    ],
)
def test_the_peer_address(client: tuple[str, int] | None, peer: IPv4Address | IPv6Address | None) -> None:
    assert peer_address(client) == peer


def test_only_a_peer_inside_a_trusted_network_is_trusted() -> None:
    networks = (ip_network("127.0.0.1/32"), ip_network("fd00::/8"))
    assert is_trusted(ip_address("127.0.0.1"), networks)
    assert is_trusted(ip_address("fd12::1"), networks)
    assert not is_trusted(ip_address("127.0.0.2"), networks)
    assert not is_trusted(ip_address("::1"), networks)
    assert not is_trusted(None, networks)
    assert not is_trusted(ip_address("127.0.0.1"), ())


def test_a_refusal_is_logged_once_per_peer_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    refusals = RefusalLog(interval=600, remembered=2, clock=lambda: now[0])
    first, second, third = ip_address("192.0.2.1"), ip_address("192.0.2.2"), ip_address("2001:db8::3")
    with caplog.at_level(logging.WARNING, "orpycamcp.http"):
        assert refusals.refused(first, "x-forwarded-for")
        assert not refusals.refused(first, "forwarded")
        assert refusals.refused(second, "x-real-ip")
        now[0] = 599.0
        assert not refusals.refused(first, "x-forwarded-for")
        now[0] = 600.0
        assert refusals.refused(first, "x-forwarded-for")
        # Two peers remembered at most: a third forgets the one logged least recently (second).
        assert refusals.refused(third, "forwarded")
        assert refusals.refused(second, "x-real-ip")
        assert refusals.refused(None, "forwarded")
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 6
    assert "set --web.trusted-proxies 2001:db8::3/128" in messages[3]
    assert "a request from a Unix socket carried forwarded" in messages[5]
