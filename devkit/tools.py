"""Command-line tools the tests need: found on PATH, or the test fails (never skips)."""

from __future__ import annotations

import shutil

import pytest


def tool(name: str) -> str:
    """The path of a required command-line tool; fails (never skips) when it is missing."""
    # Servers such as nginx live in /usr/sbin, off an ordinary user's PATH.
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if path is None:
        pytest.fail(f"{name} is required by this test but is not installed (not on PATH)")
    return path
