"""The images the tests run, built on this machine when no registry serves them.

No registry is needed: a Debian bookworm base is made with debootstrap from the
machine's own Debian mirror and imported, and Python 3.11, PostgreSQL 15 and
Redis 7 are installed on it from Debian (tests/deploy/images/). An image is
rebuilt only when its recipe changed: the recipe's hash is a label of the
image, so an engine that keeps its data root builds each of them once.
ORPYCAMCP_TEST_IMAGES=official uses the official images instead (pulled).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
RECIPES = REPO_ROOT / "tests" / "deploy" / "images"
RECIPE_LABEL = "dev.orpycamcp.recipe"
SUITE = "bookworm"
DEBIAN_BASE = "orpycamcp-dev/debian:bookworm"
APT_SOURCES = (Path("/etc/apt/sources.list.d"), Path("/etc/apt/sources.list"))
# The exporter's image as the tests run it (tests/deploy).
EXPORTER_TAG = "orpycamcp-exporter:test"
OFFICIAL = {
    "python": "python:3.11-slim-bookworm",
    "postgres": "postgres:15-bookworm",
    "redis": "redis:7-bookworm",
}


class ImageUnavailable(Exception):
    """An image could not be built; carries the command's output."""

    def __init__(self, image: str, detail: str) -> None:
        self.image = image
        self.detail = detail
        super().__init__(f"cannot build {image}: {detail}")


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    image_id: str
    size_bytes: int
    built: bool  # False when an image of the same recipe was already there
    seconds: float


def use_official_images() -> bool:
    return os.environ.get("ORPYCAMCP_TEST_IMAGES", "local") == "official"


def docker_command(*args: str, timeout: float = 900, stdin: int | None = None) -> str:
    """The docker CLI against the engine of DOCKER_HOST, classic builder (BuildKit would fetch its frontend)."""
    env = dict(os.environ, DOCKER_BUILDKIT="0")
    docker = shutil.which("docker")
    if docker is None:
        raise ImageUnavailable("-", "the docker CLI is not installed (apt-get install docker.io)")
    done = subprocess.run(
        [docker, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False, stdin=stdin
    )
    if done.returncode != 0:
        raise ImageUnavailable(args[-1], f"docker {' '.join(args[:2])} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout.strip()


def inspect(tag: str) -> tuple[str, int, str] | None:
    """(id, size, recipe label) of a local image, None if there is none."""
    try:
        labels = f'{{{{index .Config.Labels "{RECIPE_LABEL}"}}}}'
        out = docker_command("image", "inspect", "--format", "{{.Id}} {{.Size}} " + labels, tag)
    except ImageUnavailable:
        return None
    image_id, size, label = [*out.split(" ", 2), ""][:3]
    return image_id, int(size), label.strip()


def debian_mirror() -> str:
    """The Debian mirror this machine's apt uses (deb822 or one-line sources)."""
    texts: list[str] = []
    for place in APT_SOURCES:
        files = sorted(place.glob("*.sources")) + sorted(place.glob("*.list")) if place.is_dir() else [place]
        texts += [path.read_text() for path in files if path.is_file()]
    for text in texts:
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.MULTILINE)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.MULTILINE)
            if uris and suites and SUITE in suites.group(1).split():
                return uris.group(1).rstrip("/")
        for line in text.splitlines():
            match = re.match(r"deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)\s", line.strip() + " ")
            if match and match.group(2) == SUITE:
                return match.group(1).rstrip("/")
    return "http://deb.debian.org/debian"


def _digest(*parts: bytes) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(len(part).to_bytes(8, "big") + part)
    return hasher.hexdigest()[:16]


def debian_base() -> BuiltImage:
    """Debian bookworm minbase, made with debootstrap and `docker import`."""
    mirror = debian_mirror()
    recipe = _digest(f"debootstrap --variant=minbase {SUITE} {mirror}".encode())
    started = time.monotonic()
    found = inspect(DEBIAN_BASE)
    if found is not None and found[2] == recipe:
        return BuiltImage(DEBIAN_BASE, found[0], found[1], False, time.monotonic() - started)
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not Path(debootstrap).exists():
        raise ImageUnavailable(DEBIAN_BASE, "debootstrap is not installed (apt-get install debootstrap)")
    with tempfile.TemporaryDirectory(prefix="orpycamcp-rootfs-") as workdir:
        rootfs = Path(workdir) / "rootfs"
        done = subprocess.run(
            [debootstrap, "--variant=minbase", SUITE, str(rootfs), mirror],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0:
            raise ImageUnavailable(DEBIAN_BASE, f"debootstrap exited {done.returncode}: {done.stdout[-2000:]}")
        # The downloaded packages and lists are not part of a base image.
        for leftover in (rootfs / "var/cache/apt/archives").glob("*.deb"):
            leftover.unlink()
        shutil.rmtree(rootfs / "var/lib/apt/lists", ignore_errors=True)
        (rootfs / "var/lib/apt/lists/partial").mkdir(parents=True)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        try:
            docker_command(
                "import",
                "--change",
                'CMD ["bash"]',
                "--change",
                f"LABEL {RECIPE_LABEL}={recipe}",
                "-",
                DEBIAN_BASE,
                stdin=tar.stdout.fileno(),
            )
        finally:
            tar.stdout.close()
            tar.wait()
    found = inspect(DEBIAN_BASE)
    assert found is not None
    return BuiltImage(DEBIAN_BASE, found[0], found[1], True, time.monotonic() - started)


def build(
    tag: str, context: Path, build_args: dict[str, str], inputs: tuple[str, ...] = (), files: list[Path] | None = None
) -> BuiltImage:
    """`docker build` of `context` unless an image of the same recipe (`files` of the
    context, the build arguments and any other `inputs`) is there."""
    if files is None:
        files = [path for path in context.rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    recipe = _digest(
        *(f"{path.relative_to(context)}\0".encode() + path.read_bytes() for path in sorted(files)),
        *(f"{key}={value}".encode() for key, value in sorted(build_args.items())),
        *(part.encode() for part in inputs),
    )
    started = time.monotonic()
    found = inspect(tag)
    if found is not None and found[2] == recipe:
        return BuiltImage(tag, found[0], found[1], False, time.monotonic() - started)
    args = ["build", "--quiet", "--force-rm", "--label", f"{RECIPE_LABEL}={recipe}", "--tag", tag]
    for key, value in sorted(build_args.items()):
        args += ["--build-arg", f"{key}={value}"]
    docker_command(*args, str(context))
    found = inspect(tag)
    assert found is not None
    return BuiltImage(tag, found[0], found[1], True, time.monotonic() - started)


def _on_debian(name: str) -> BuiltImage:
    base = debian_base()
    # The base's id is part of the recipe: a new base rebuilds what stands on it.
    return build(f"orpycamcp-dev/{name}:{SUITE}", RECIPES / name, {"BASE_IMAGE": DEBIAN_BASE}, (base.image_id,))


def image(name: str) -> str:
    """The tag of the python, postgres or redis image to run: built here, or the official one."""
    if use_official_images():
        return OFFICIAL[name]
    return _on_debian(name).tag


def server_images() -> dict[str, str]:
    """The python, postgres and redis images, built side by side when they must be."""
    if use_official_images():
        return dict(OFFICIAL)
    debian_base()
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(_on_debian, name) for name in OFFICIAL}
        return {name: future.result().tag for name, future in futures.items()}


def exporter_image(tag: str, base: str) -> BuiltImage:
    """The project's Dockerfile built on `base`, offline, from a wheelhouse made by scripts/wheelhouse."""
    wheelhouse = subprocess.run(
        [str(REPO_ROOT / "scripts" / "wheelhouse")], capture_output=True, text=True, timeout=600, check=False
    )
    if wheelhouse.returncode != 0:
        raise ImageUnavailable(tag, f"scripts/wheelhouse exited {wheelhouse.returncode}: {wheelhouse.stderr[-2000:]}")
    # What the build context holds (.dockerignore is an allow-list of these).
    files = [REPO_ROOT / "Dockerfile", REPO_ROOT / "pyproject.toml", REPO_ROOT / "README.md"]
    files += [REPO_ROOT / "requirements" / "runtime.txt", REPO_ROOT / "requirements" / "build.txt"]
    for directory in ("exporter", "registry", "wheels"):
        files += [p for p in (REPO_ROOT / directory).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    base_id = inspect(base)
    return build(tag, REPO_ROOT, {"BASE_IMAGE": base}, (base_id[0] if base_id else base,), files)


def main() -> int:
    """Build every image the tests run, on the engine of DOCKER_HOST, ahead of the tests
    (.ci/run and scripts/test do, while other work runs): the tests then find them built."""
    try:
        servers = server_images()
        built = exporter_image(EXPORTER_TAG, servers["python"])
    except ImageUnavailable as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"devkit.images: ready: {', '.join(servers.values())}, {built.tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
