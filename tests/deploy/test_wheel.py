"""The wheel as `pip install` users get it: built, installed with its
dependencies into a fresh virtualenv, and every command run from a directory
outside the checkout (nothing of the source tree on the path)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from devkit.process import running_process
from devkit.servers import PostgresServer, free_port
from registry import SIGNALS, VERSION
from tests.platform import create_platform
from tests.scrapes import parse

from .files import REPO_ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh virtualenv holding the built wheel and its dependencies (from the wheelhouse)."""
    root = tmp_path_factory.mktemp("wheel")
    wheelhouse = subprocess.run(
        [str(REPO_ROOT / "scripts" / "wheelhouse")], capture_output=True, text=True, timeout=600, check=False
    )
    assert wheelhouse.returncode == 0, wheelhouse.stderr
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(root / "dist"),
            str(REPO_ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (root / "dist").glob("orpycamcp_exporter-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=300)
    pip = [str(root / "venv" / "bin" / "pip"), "install", "--quiet", "--no-index"]
    install = subprocess.run(
        [*pip, "--find-links", str(REPO_ROOT / "wheels"), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    return root / "venv" / "bin"


def outside(tmp_path: Path) -> dict[str, str]:
    """An environment with nothing of the checkout: no PYTHONPATH, no exporter settings."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith(("ORPYCAMCP_", "DATABASE"))}


def run(bin_dir: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "orpycamcp-exporter"), *args],
        cwd=tmp_path,
        env=outside(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_package_comes_from_the_virtualenv(installed: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(installed / "python"), "-c", "import exporter; print(exporter.__file__)"],
        cwd=tmp_path,
        env=outside(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith(str(installed.parent / "lib")), done.stdout
    assert run(installed, tmp_path, "--version").stdout == f"orpycamcp-exporter {VERSION}\n"


def test_metrics_and_check_config(installed: Path, tmp_path: Path) -> None:
    metrics = run(installed, tmp_path, "metrics")
    assert metrics.returncode == 0, metrics.stderr
    assert "`orpycamcp_signal_measured`" in metrics.stdout
    check = run(installed, tmp_path, "check-config", "--database-url", "postgresql://u@127.0.0.1:1/d")
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("configuration valid: signals dlq,preservation,audit_chain on ")


def test_diagnose(installed: Path, tmp_path: Path, pg_server: PostgresServer) -> None:
    platform = asyncio.run(create_platform(pg_server))
    done = run(installed, tmp_path, "diagnose", "--database-url", platform.exporter_url)
    assert done.returncode == 0, done.stdout + done.stderr


def test_demo(installed: Path, tmp_path: Path) -> None:
    port = free_port()

    def measured() -> bool:
        try:
            page = parse(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).content)
        except httpx.TransportError:
            return False
        return page.measured("dlq") == 1

    command = [str(installed / "orpycamcp-exporter"), "demo", "--web.listen-address", f"127.0.0.1:{port}"]
    with running_process(
        command, port, tmp_path / "demo.log", measured, outside(tmp_path), timeout=90, cwd=tmp_path
    ) as demo:
        page = parse(httpx.get(demo.url + "/metrics", timeout=30).content)
        for name in SIGNALS:
            assert page.measured(name) == 1, demo.log()
        demo.process.send_signal(signal.SIGINT)
        assert demo.process.wait(timeout=60) == 0, demo.log()
