"""The lock files in requirements/: what each one is resolved from (read from
pyproject.toml), how it is made, and which of its pins a wheelhouse needs.

Every lock pins each package with the sha256 of each of its artifacts on PyPI,
resolved once for every platform and every Python that `requires-python`
allows (uv's universal resolution), so that `pip install --require-hashes`
installs the same files on any machine, whatever index or mirror serves them:

- runtime.txt: the [project] dependencies, what the image and the wheel run;
- build.txt: the [build-system] requires and the `sbom` dependency group, what
  the image build runs besides pip;
- test.txt: all of them and the `test` extra, the development virtualenv;
- lowest.txt: the [project] dependencies at the lowest versions their bounds
  allow (uv's `--resolution lowest-direct`), what scripts/test-lowest runs a
  part of the tests on, so that a lower bound is a version that works.

A lock's header lists the requirements it was resolved from, so that
tests/test_locks.py can tell when pyproject.toml has moved on without it.
`python -m devkit.locks lock` (scripts/lock) remakes them.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
LOCK_DIR = REPO_ROOT / "requirements"
# The artifacts whose hashes are recorded: PyPI's, whatever this machine's pip or uv configuration says.
INDEX = "https://pypi.org/simple"
INPUT_PREFIX = "# input: "
REQUIRES_PYTHON_PREFIX = "# requires-python: "
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$")
# Patch releases a minor version is taken to have, for markers on python_full_version.
PATCH_RELEASES = 40
HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


@dataclass(frozen=True)
class Lock:
    """One lock file: its name in requirements/, what it says it holds, and what it is resolved from."""

    name: str
    purpose: str
    inputs: tuple[str, ...]
    # The locks resolved before this one, whose pins this one keeps.
    constrained_by: tuple[str, ...] = ()
    resolution: str = "highest"  # uv's --resolution: lowest-direct takes each direct dependency's lower bound

    @property
    def path(self) -> Path:
        return LOCK_DIR / f"{self.name}.txt"


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    marker: str | None
    hashes: tuple[str, ...]

    def requirement(self) -> str:
        """The pin as one requirement line pip reads, hashes included."""
        return f"{self.name}=={self.version} " + " ".join(f"--hash=sha256:{digest}" for digest in self.hashes)


def read_pyproject(path: Path = REPO_ROOT / "pyproject.toml") -> dict[str, Any]:
    with path.open("rb") as file:
        return tomllib.load(file)


def locks(pyproject: dict[str, Any]) -> tuple[Lock, ...]:
    """The locks, in the order they are resolved."""
    runtime = tuple(pyproject["project"]["dependencies"])
    build = (*pyproject["build-system"]["requires"], *pyproject["dependency-groups"]["sbom"])
    test = (*runtime, *build, *pyproject["project"]["optional-dependencies"]["test"])
    return (
        Lock("runtime", "the runtime dependencies (what the image and the wheel run)", runtime),
        Lock("build", "the image build's tools: build backend and SBOM writer", build, ("runtime",)),
        Lock("test", "the development virtualenv: runtime, build and test tools", test, ("runtime", "build")),
        Lock(
            "lowest",
            "the runtime dependencies at their lower bounds (scripts/test-lowest)",
            runtime,
            resolution="lowest-direct",
        ),
    )


def requires_python(pyproject: dict[str, Any]) -> str:
    return str(pyproject["project"]["requires-python"])


def header(lock: Lock, python: str) -> str:
    lines = [
        f"# {lock.name}.txt: {lock.purpose},",
        "# pinned with the sha256 of every artifact on PyPI, for every platform and Python.",
        "# Made by scripts/lock from pyproject.toml: do not edit. tests/test_locks.py fails",
        "# when pyproject.toml no longer declares the inputs below.",
        f"{REQUIRES_PYTHON_PREFIX}{python}",
        *(f"{INPUT_PREFIX}{requirement}" for requirement in lock.inputs),
    ]
    return "\n".join(lines) + "\n"


def recorded_inputs(text: str) -> tuple[str, ...]:
    return tuple(line.removeprefix(INPUT_PREFIX) for line in text.splitlines() if line.startswith(INPUT_PREFIX))


def recorded_requires_python(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(REQUIRES_PYTHON_PREFIX):
            return line.removeprefix(REQUIRES_PYTHON_PREFIX)
    return None


def pins(text: str) -> list[Pin]:
    """The pins of a lock, each with its marker and hashes (uv's layout: continuation lines, `# via` notes)."""
    found: list[Pin] = []
    name = version = marker = None
    hashes: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("    "):
            hashes += HASH.findall(line)
            continue
        if name is not None and version is not None:
            found.append(Pin(name, version, marker, tuple(hashes)))
        name = version = marker = None
        hashes = []
        match = PIN.match(line)
        if match:
            name, version, marker = match["name"], match["version"], match["marker"]
        elif line.strip() and not line.startswith("#"):
            raise ValueError(f"not a pinned requirement: {line!r}")
    return found


def minimum_python(specifier: str) -> str:
    """The lowest minor version `requires-python` allows (`>=3.11` -> `3.11`): where the resolution starts."""
    match = re.search(r">=\s*(\d+\.\d+)", specifier)
    if match is None:
        raise ValueError(f"requires-python {specifier!r} has no lower bound")
    return match.group(1)


def uv() -> str:
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.exists() else "uv"


def lock(upgrade: list[str]) -> None:
    """Resolves every lock from pyproject.toml with uv, keeping the pins already there unless upgraded."""
    pyproject = read_pyproject()
    python = requires_python(pyproject)
    LOCK_DIR.mkdir(exist_ok=True)
    # Neither pip's nor uv's machine configuration: only PyPI, whatever mirror this machine is given.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("UV_", "PIP_"))}
    for each in locks(pyproject):
        with tempfile.TemporaryDirectory(prefix="orpycamcp-lock-") as workdir:
            source = Path(workdir) / f"{each.name}.in"
            source.write_text("".join(f"{requirement}\n" for requirement in each.inputs))
            output = Path(workdir) / f"{each.name}.txt"
            if each.path.exists():
                # uv keeps the pins of an existing output file: a relock moves only what must move.
                output.write_text(each.path.read_text())
            command = [
                uv(),
                "pip",
                "compile",
                str(source),
                "--no-config",
                "--default-index",
                INDEX,
                "--universal",
                "--python-version",
                minimum_python(python),
                "--resolution",
                each.resolution,
                "--generate-hashes",
                "--no-header",
                "--quiet",
                "--output-file",
                str(output),
            ]
            for name in each.constrained_by:
                command += ["--constraints", f"requirements/{name}.txt"]
            command += upgrade
            done = subprocess.run(command, env=env, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"scripts/lock: resolving {each.name}.txt failed:\n{done.stderr.strip()}")
            body = output.read_text().replace(f"{workdir}/", "")
        each.path.write_text(header(each, python) + body)
        print(f"scripts/lock: {each.path.relative_to(REPO_ROOT)}: {len(pins(body))} pins")


def target_environments(minor: str) -> list[dict[str, str]]:
    """Marker environments of this machine's platform under every CPython patch release of `minor` (3.11)."""
    base = {
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": sys.platform,
        "os_name": os.name,
        "platform_system": platform.system(),
        "platform_machine": platform.machine(),
        "python_version": minor,
    }
    return [{**base, "python_full_version": f"{minor}.{patch}"} for patch in range(PATCH_RELEASES)]


def wheelhouse_requirements(names: list[str], minor: str) -> list[str]:
    """The pins of the named locks that some CPython `minor`.x installs on this platform.

    `pip download` evaluates markers for the Python running it, whatever --python-version
    says: a pin such as `async-timeout ; python_full_version < '3.11.3'` would be left out
    of a wheelhouse made with 3.11.7 for an image whose Python is 3.11.2.
    """
    from packaging.markers import Marker

    environments = target_environments(minor)
    wanted: dict[str, Pin] = {}
    for name in names:
        for pin in pins((LOCK_DIR / f"{name}.txt").read_text()):
            marker = Marker(pin.marker) if pin.marker else None
            if marker is None or any(marker.evaluate(environment) for environment in environments):
                wanted.setdefault(pin.name.lower(), pin)
    return [pin.requirement() for pin in wanted.values()]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m devkit.locks", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("lock", help="remake requirements/*.txt from pyproject.toml")
    make.add_argument("--upgrade", action="store_true", help="take the newest versions, not the pinned ones")
    make.add_argument("--upgrade-package", action="append", default=[], metavar="NAME", help="upgrade only NAME")
    wheels = commands.add_parser("wheelhouse", help="print the pins a wheelhouse needs, one a line, hashes included")
    wheels.add_argument("--lock", action="append", required=True, help="runtime, build or test")
    wheels.add_argument("--python", required=True, help="the CPython minor version the wheels are for (3.11)")
    arguments = parser.parse_args()
    if arguments.command == "lock":
        upgrade = ["--upgrade"] if arguments.upgrade else []
        for name in arguments.upgrade_package:
            upgrade += ["--upgrade-package", name]
        lock(upgrade)
    else:
        print("\n".join(wheelhouse_requirements(arguments.lock, arguments.python)))


if __name__ == "__main__":
    main()
