"""Reading the deployment files the way Docker and docker compose read them,
just enough for the tests: Dockerfile instructions, .dockerignore rules and
the compose file's services, mounts, ports and variables."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
DEPLOY_DIR = REPO_ROOT / "deploy"
COMPOSE_FILE = DEPLOY_DIR / "docker-compose.yml"


def tool(name: str) -> str:
    """The path of a required command-line tool; fails (never skips) when it is missing."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is required by this test but is not installed (not on PATH)")
    return path


# --- Dockerfile ------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    args: str  # the rest of the instruction, continuation lines joined

    def exec_form(self) -> list[str]:
        """The JSON (exec) form of CMD, ENTRYPOINT or HEALTHCHECK ... CMD; fails on the shell form."""
        text = self.args
        if self.keyword == "HEALTHCHECK":
            text = re.sub(r"^(?:--[a-z-]+=\S+\s+)*CMD\s+", "", text)
        value = json.loads(text)
        assert isinstance(value, list), self
        assert all(isinstance(item, str) for item in value), self
        return value


def dockerfile_instructions(text: str) -> list[Instruction]:
    """Instructions in order; comments dropped, backslash continuations joined."""
    instructions: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction are dropped
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = (pending + stripped).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        instructions.append(Instruction(keyword.upper(), " ".join(args.split())))
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return instructions


def global_args(instructions: list[Instruction]) -> dict[str, str]:
    """The ARGs before the first FROM (the ones FROM lines can use), with their defaults."""
    found: dict[str, str] = {}
    for instruction in instructions:
        if instruction.keyword == "FROM":
            break
        assert instruction.keyword == "ARG", f"{instruction.keyword} before the first FROM"
        name, _, default = instruction.args.partition("=")
        found[name] = default
    return found


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    """The instructions grouped by build stage, each starting with its FROM (global ARGs left out)."""
    grouped: list[list[Instruction]] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            grouped.append([])
        if not grouped and instruction.keyword == "ARG":
            continue
        assert grouped, f"{instruction.keyword} before the first FROM"
        grouped[-1].append(instruction)
    return grouped


def key_values(args: str) -> dict[str, str]:
    """KEY=VALUE pairs of LABEL, ENV or ARG (values optionally double-quoted)."""
    pairs = re.findall(r'([A-Za-z0-9_.\-]+)=("(?:[^"\\]|\\.)*"|\S+)', args)
    return {key: value[1:-1] if value.startswith('"') else value for key, value in pairs}


# --- .dockerignore ---------------------------------------------------------------


def dockerignore_excludes(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves `path` (relative, '/'-separated) out of the build context.

    The last matching pattern wins; `!` re-includes; a pattern matching a
    directory matches everything under it; a leading `**/` matches at any depth,
    the root included.
    """
    excluded = False
    parts = path.split("/")
    prefixes = ["/".join(parts[: index + 1]) for index in range(len(parts))]
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw[1:] if negate else raw
        pattern = pattern.strip("/")
        candidates = [pattern]
        if pattern.startswith("**/"):
            candidates.append(pattern[3:])
        for prefix in prefixes:
            if any(_glob_match(prefix, candidate) for candidate in candidates):
                excluded = not negate
                break
    return excluded


def _glob_match(path: str, pattern: str) -> bool:
    if "**" in pattern:
        return fnmatch.fnmatchcase(path, pattern.replace("**", "*"))
    # Go's filepath.Match: `*` never crosses a `/`.
    if path.count("/") != pattern.count("/"):
        return False
    return all(fnmatch.fnmatchcase(part, glob) for part, glob in zip(path.split("/"), pattern.split("/"), strict=True))


def dockerignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


# --- docker compose ----------------------------------------------------------------

_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")


def interpolate(value: str, env: dict[str, str] | None = None) -> str:
    """Compose's `${NAME}` / `${NAME:-default}` with `env` (empty: every default applies)."""
    values = env or {}

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if values.get(name):
            return values[name]
        default = match.group("default")
        assert default is not None, f"${{{name}}} has no default: the example would need an .env file"
        return default

    return _VARIABLE.sub(replace, value)


def compose() -> dict[str, Any]:
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(document, dict)
    return document


def service(name: str) -> dict[str, Any]:
    services = compose()["services"]
    assert name in services, f"{COMPOSE_FILE.name} has no service {name!r} (it has {sorted(services)})"
    found = services[name]
    assert isinstance(found, dict)
    return found


@dataclass(frozen=True)
class Mount:
    source: Path  # on the host
    target: str  # in the container


def bind_mounts(definition: dict[str, Any]) -> list[Mount]:
    """The bind mounts of a service (short syntax); named volumes are left out."""
    mounts: list[Mount] = []
    for volume in definition.get("volumes", []):
        assert isinstance(volume, str), f"long volume syntax is not used here: {volume!r}"
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/")):
            mounts.append(Mount((DEPLOY_DIR / source).resolve(), target))
    return mounts


def mount_target(definition: dict[str, Any], source: Path) -> str:
    """Where `source` (a repository path) is mounted in the service's container."""
    for mount in bind_mounts(definition):
        if mount.source == source.resolve():
            return mount.target
    raise AssertionError(f"{source.relative_to(REPO_ROOT)} is not mounted into the service")


def host_path(definition: dict[str, Any], container_path: str) -> Path:
    """The repository file a container path of the service comes from, through its bind mounts."""
    best: Mount | None = None
    for mount in bind_mounts(definition):
        target = mount.target.rstrip("/")
        inside = container_path == target or container_path.startswith(target + "/")
        if inside and (best is None or len(target) > len(best.target.rstrip("/"))):
            best = mount
    assert best is not None, f"{container_path} is not inside any bind mount of the service"
    return best.source / container_path[len(best.target.rstrip("/")) :].lstrip("/")


def container_ports(definition: dict[str, Any]) -> list[int]:
    """Container ports of the service's published ports ([ip:]host:container)."""
    return [int(str(port).rsplit(":", 1)[-1].split("/")[0]) for port in definition.get("ports", [])]


def command_flag(definition: dict[str, Any], flag: str) -> str:
    for argument in definition.get("command", []):
        if argument.startswith(flag + "="):
            return str(argument.split("=", 1)[1])
    raise AssertionError(f"the service's command sets no {flag}")
