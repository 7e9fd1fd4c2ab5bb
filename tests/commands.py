"""Running the exporter's command line as an operator does: a process of its own."""

from __future__ import annotations

import subprocess
import sys


def run_exporter(*args: str) -> subprocess.CompletedProcess[str]:
    """`orpycamcp-exporter ARGS` (python -m exporter), its output as text."""
    return subprocess.run([sys.executable, "-m", "exporter", *args], capture_output=True, text=True, timeout=120)


def refused_in_one_line(*args: str) -> str:
    """The one line of stderr with which `orpycamcp-exporter ARGS` exits 2, printing nothing else."""
    done = run_exporter(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr
