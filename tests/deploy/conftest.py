"""The image and compose tests: a Docker engine (never a skip), the images
built once per session, and what they measured reported at the end of the run."""

from __future__ import annotations

import fcntl
import os

import pytest

from devkit import images
from devkit.docker_engine import DockerEngine
from tests.parallel import one_worker_at_a_time

EXPORTER_TAG = images.EXPORTER_TAG
# Filled by the tests, printed by pytest_terminal_summary: sizes, health transitions, stop times.
REPORT: list[str] = []


# The first test that needs the images builds them on a cold engine (a Debian base by
# debootstrap, three server images, the exporter's two stages): minutes on a loaded
# machine, beyond the suite's per-test timeout. Each docker command has its own bound.
IMAGE_BUILDING_TIMEOUT = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if {"server_images", "exporter_image"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.timeout(IMAGE_BUILDING_TIMEOUT))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REPORT:
        terminalreporter.section("image and compose measurements")
        for line in REPORT:
            terminalreporter.write_line(line)


def background_build_ended() -> None:
    """Waits for the images scripts/engine.bash builds beside the tests: the build holds
    the lock ORPYCAMCP_IMAGES_LOCK names until it exits (none named: nothing to wait for)."""
    path = os.environ.get("ORPYCAMCP_IMAGES_LOCK")
    if path:
        with open(path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_SH)


@pytest.fixture(scope="session")
def server_images(docker_engine: DockerEngine, request: pytest.FixtureRequest) -> dict[str, str]:
    """The python, postgres and redis images (built here on Debian bookworm unless official ones are used).

    Built by one worker at a time: the next finds them built on a shared engine.
    """
    background_build_ended()
    try:
        with one_worker_at_a_time(request.config, "images"):
            return images.server_images()
    except images.ImageUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def exporter_image(server_images: dict[str, str], request: pytest.FixtureRequest) -> images.BuiltImage:
    """The project's Dockerfile, built offline from a wheelhouse on the session's python image."""
    try:
        with one_worker_at_a_time(request.config, "images"):
            built = images.exporter_image(EXPORTER_TAG, server_images["python"])
    except images.ImageUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    how = f"built in {built.seconds:.1f} s" if built.built else "same recipe already built"
    REPORT.append(f"image {built.tag} on {server_images['python']}: {built.size_bytes / 1e6:.1f} MB ({how})")
    return built
