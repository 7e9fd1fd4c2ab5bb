"""The wheel as `pip install` users get it: built, installed with its locked
dependencies into a fresh virtualenv (by uv, which installs the same files from
the same wheels), and every command run from a directory outside the checkout
(nothing of the source tree on the path)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from packaging.utils import canonicalize_name

from devkit.locks import pins
from devkit.process import running_process
from devkit.servers import PostgresServer, free_port
from registry import SIGNALS, VERSION
from tests.platform import create_platform
from tests.scrapes import DATABASE_SIGNALS, parse

from .files import REPO_ROOT

RUNTIME_LOCK = REPO_ROOT / "requirements" / "runtime.txt"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh virtualenv holding the built wheel and its dependencies (from the wheelhouse).

    Built, made and installed by uv (in the test tools' lock): the same build backend
    builds the same wheel, and the same files are installed from it and from the
    locked wheels, hashes checked, as pip does, in a tenth of pip's CPU time (pip:
    about 20 s of CPU, the module's longest part)."""
    root = tmp_path_factory.mktemp("wheel")
    wheelhouse = subprocess.run(
        [str(REPO_ROOT / "scripts" / "wheelhouse")], capture_output=True, text=True, timeout=600, check=False
    )
    assert wheelhouse.returncode == 0, wheelhouse.stderr
    uv = [str(Path(sys.executable).parent / "uv"), "--quiet", "--offline", "--no-config"]
    built = subprocess.run(
        [*uv, "build", "--wheel", "--no-build-isolation", "--python", sys.executable, "--out-dir", str(root / "dist")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (root / "dist").glob("orpycamcp_exporter-*.whl")
    subprocess.run([*uv, "venv", "--python", sys.executable, str(root / "venv")], check=True, timeout=300)
    install = [*uv, "pip", "install", "--python", str(root / "venv" / "bin" / "python"), "--no-index"]
    # The dependencies as the lock pins them, hashes checked; then the wheel alone.
    locked = ["--require-hashes", "--find-links", str(REPO_ROOT / "wheels"), "-r", str(RUNTIME_LOCK)]
    for arguments in (locked, ["--no-deps", str(wheel)]):
        done = subprocess.run([*install, *arguments], capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr
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
    check = run(installed, tmp_path, "check-config", "--database.url", "postgresql://u@127.0.0.1:1/d")
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith(f"configuration valid: signals {','.join(DATABASE_SIGNALS)} on ")


def test_diagnose(installed: Path, tmp_path: Path, pg_server: PostgresServer) -> None:
    platform = asyncio.run(create_platform(pg_server))
    done = run(installed, tmp_path, "diagnose", "--database.url", platform.exporter_url)
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


def installed_distributions(python: Path, cwd: Path) -> dict[str, str]:
    """{name: version} of every distribution `python` sees, as importlib.metadata tells it there."""
    script = "import importlib.metadata as m, json; print(json.dumps({d.name: d.version for d in m.distributions()}))"
    done = subprocess.run([str(python), "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60, check=True)
    return {str(canonicalize_name(name)): version for name, version in json.loads(done.stdout).items()}


def test_the_sbom_lists_what_the_virtualenv_holds(installed: Path, tmp_path: Path) -> None:
    sbom = tmp_path / "sbom.cdx.json"
    done = subprocess.run(
        [str(REPO_ROOT / "scripts" / "sbom"), str(installed.parent), str(sbom)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(sbom.read_text())
    assert document["bomFormat"] == "CycloneDX"
    listed = {str(canonicalize_name(c["name"])): str(c["version"]) for c in document["components"]}
    assert listed == installed_distributions(installed / "python", tmp_path)
    assert listed["orpycamcp-exporter"] == VERSION
    for pin in pins(RUNTIME_LOCK.read_text()):
        if pin.marker is None:
            assert listed[str(canonicalize_name(pin.name))] == pin.version, pin.name
