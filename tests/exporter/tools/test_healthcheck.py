"""Which settings the health check takes: the serving process's command line,
then the environment, then the defaults; its own flags first."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.errors import ConfigError
from exporter.tools.healthcheck import plan, probe_host, serve_arguments

CONSOLE = b"/opt/venv/bin/python3\x00/opt/venv/bin/orpycamcp-exporter\x00"
# No database URL: the probe does not need one.
ENV: dict[str, str] = {}


def cmdline(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "cmdline"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            CONSOLE + b"serve\x00--web.listen-address\x00127.0.0.1:9999\x00",
            ["serve", "--web.listen-address", "127.0.0.1:9999"],
        ),
        (CONSOLE, []),
        (b"python3\x00-m\x00exporter\x00--ttl\x00060\x00", ["--ttl", "060"]),
        (b"/sbin/docker-init\x00--\x00sleep\x00", None),
    ],
)
def test_serve_arguments(content: bytes, expected: list[str] | None) -> None:
    assert serve_arguments(content) == expected


def test_the_serving_command_line_sets_the_address(tmp_path: Path) -> None:
    main = cmdline(tmp_path, CONSOLE + b"serve\x00--web.listen-address\x00127.0.0.2:56451\x00")
    probe = plan({}, ENV | {"ORPYCAMCP_LISTEN_ADDRESS": ":9000"}, main)
    assert (probe.host, probe.port, probe.tls) == ("127.0.0.2", 56451, False)


def test_the_environment_then_the_default(tmp_path: Path) -> None:
    main = cmdline(tmp_path, CONSOLE + b"serve\x00")
    assert plan({}, ENV | {"ORPYCAMCP_LISTEN_ADDRESS": ":9000"}, main).url == "http://127.0.0.1:9000/-/healthy"
    assert plan({}, ENV, main).url == "http://127.0.0.1:9874/-/healthy"
    # Not the exporter (or no /proc): the environment and defaults alone.
    assert plan({}, ENV, tmp_path / "absent").port == 9874


def test_its_own_flags_win(tmp_path: Path) -> None:
    main = cmdline(tmp_path, CONSOLE + b"--web.listen-address\x00127.0.0.1:7000\x00")
    assert plan({"web_listen_address": "[::]:7100"}, ENV, main).url == "http://[::1]:7100/-/healthy"


@pytest.mark.parametrize(
    ("listen", "probe"), [("0.0.0.0", "127.0.0.1"), ("::", "::1"), ("10.1.2.3", "10.1.2.3"), ("svc", "svc")]
)
def test_probe_host(listen: str, probe: str) -> None:
    assert probe_host(listen) == probe


def test_only_the_probed_options_are_read(tmp_path: Path) -> None:
    """Options the probe does not use may be missing or invalid (they are serve's to refuse)."""
    main = cmdline(tmp_path, CONSOLE + b"serve\x00--ttl\x000\x00--web.listen-address\x00127.0.0.1:7300\x00")
    assert plan({}, {"ORPYCAMCP_DATABASE_POOL_MODE": "statement"}, main).url == "http://127.0.0.1:7300/-/healthy"


def test_an_empty_host_is_probed_on_the_ipv4_loopback(tmp_path: Path) -> None:
    assert plan({}, {"ORPYCAMCP_WEB_LISTEN_ADDRESS": ":7400"}, tmp_path / "absent").url == (
        "http://127.0.0.1:7400/-/healthy"
    )


def test_an_invalid_listen_address_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--web\.listen-address"):
        plan({"web_listen_address": ["127.0.0.1:1", "127.0.0.1:2"]}, {}, tmp_path / "absent")
