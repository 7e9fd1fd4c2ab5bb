"""Code run in another source tree's process (its directory first on PYTHONPATH):
how a benchmark measures the same thing in this tree and in the tree of `--before`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def probe(tree: Path, code: str, *args: str, timeout: float = 1800) -> dict[str, object]:
    """Run `code` (which prints one JSON line last) with `args` in a process on `tree`'s code: that line."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
