"""Mutation testing of the modules that decide truth and secrecy, with mutmut
(not a dependency of the project: installed beside it, see docs/testing.md).

    python -m devkit.mutation exporter/validate.py      # one module, the tests that exercise it
    python -m devkit.mutation --list                    # the modules and the tests that cover them

Each module is mutated in a copy of the tree (under a temporary directory, or
--work DIR to keep it and rerun), with only the tests that exercise it (its
mirrored test files at least: tests/devkit/test_mutation.py): mutmut runs, per
mutant, the tests that reached the mutated function. The result is mutmut's
own listing (`mutmut results`), plus the score."""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Module -> the tests that exercise it (tests mirror the package: each module's
# test_<name>.py and test_<name>_*.py are listed, checked by tests/devkit/test_mutation.py).
TARGETS: dict[str, tuple[str, ...]] = {
    "exporter/validate.py": ("tests/exporter/test_validate.py", "tests/exporter/test_outcomes.py"),
    # The samples' layout (one family's values, a measurement's families in order).
    "exporter/samples.py": (
        "tests/exporter/test_samples.py",
        "tests/exporter/test_validate.py",
        "tests/exporter/exposition/test_assemble.py",
    ),
    "exporter/exposition/text.py": ("tests/exporter/exposition/test_text.py",),
    "exporter/exposition/assemble.py": ("tests/exporter/exposition/test_assemble.py",),
    # The rule on the values servers report; the servers themselves: postgres/test_standby.py, redis/test_replica.py.
    "exporter/freshness.py": ("tests/exporter/test_freshness.py",),
    "exporter/sources/url_secrets.py": (
        "tests/exporter/sources/test_url_secrets.py",
        "tests/exporter/sources/redis/test_url.py",
    ),
    "exporter/yamlfile.py": ("tests/exporter/test_yamlfile.py",),
    "exporter/http/webconfig.py": (
        "tests/exporter/http/test_webconfig.py",
        "tests/exporter/http/test_webconfig_toolkit.py",
    ),
    "exporter/http/reload.py": ("tests/exporter/http/test_reload.py", "tests/exporter/http/test_auth.py"),
    "exporter/http/limits.py": ("tests/exporter/http/test_limits.py", "tests/exporter/test_options.py"),
    # The statement naming and session checks of the PostgreSQL source, on the session's
    # PostgreSQL (the same through real PgBouncers: sources/postgres/test_pool_modes.py).
    "exporter/sources/postgres/transaction.py": ("tests/exporter/sources/postgres/test_transaction.py",),
    "exporter/sources/postgres/pooler.py": ("tests/exporter/sources/postgres/test_pooler.py",),
    "exporter/sources/postgres/lanes.py": ("tests/exporter/sources/postgres/test_lanes.py",),
    # The reader's own statement naming and session check (with --only, its functions).
    "exporter/sources/postgres/source.py": (
        "tests/exporter/sources/postgres/test_source.py",
        "tests/exporter/sources/postgres/test_pool_modes.py",
    ),
    # The Redis reader's replica path (with --only, `RedisStreams._read`: INFO replication in the
    # reading's pipeline, the link it gives, the staleness rule applied before the replies are read).
    "exporter/sources/redis/source.py": (
        "tests/exporter/sources/redis/test_replica.py",
        "tests/exporter/sources/redis/test_source.py",
        # The cluster's branch of the same function (a cluster's masters are read, never a replica).
        "tests/exporter/sources/redis/test_cluster.py",
    ),
    # Which master the reader trusts behind sentinels (with --only, `AgreeingSentinel` and
    # `SentinelClients`), on real sentinels; failovers: tests/faults/test_redis_sentinel.py.
    "exporter/sources/redis/clients.py": ("tests/exporter/sources/redis/test_sentinel.py",),
    "exporter/signals/audit_chain.py": ("tests/exporter/signals/test_audit_chain.py",),
    "exporter/signals/streams.py": (
        "tests/exporter/signals/test_streams.py",
        "tests/exporter/signals/test_streams_lag.py",
        "tests/exporter/signals/test_stream_deliveries.py",
        "tests/exporter/signals/test_stream_signals.py",
        "tests/exporter/signals/test_declared_streams.py",
        "tests/exporter/test_declared_streams.py",
    ),
    "exporter/signals/backlog.py": (
        "tests/exporter/signals/test_backlog.py",
        "tests/exporter/signals/test_backlog_states.py",
        "tests/exporter/signals/test_backlog_zones.py",
        # The built-in table signals, measured by the same code (exporter/contract/tables.py).
        "tests/exporter/signals/test_dlq.py",
        "tests/exporter/signals/test_preservation.py",
        "tests/exporter/signals/test_table_signals_page.py",
        # The truths of the platform as it is, measured by the same code: values nobody
        # declared under a catch-all, the column types and values, row security, future
        # timestamps, and a platform whose tables differ from the shipped contract.
        "tests/exporter/signals/test_backlog_catch_all.py",
        "tests/exporter/signals/test_column_types.py",
        "tests/exporter/signals/test_column_values.py",
        "tests/exporter/signals/test_row_security.py",
        "tests/exporter/signals/test_future_timestamps.py",
        "tests/exporter/signals/test_builtin_contract_replaced.py",
        "tests/exporter/signals/test_table_signals_replaced.py",
    ),
}

# What the tests read besides the package and the tests themselves.
ALSO_COPY = ("registry", "devkit", "bench", "deploy", "docs", "alerts", "grafana", "mixin", "README.md")


def config(module: str, tests: tuple[str, ...]) -> str:
    def toml_list(items: tuple[str, ...] | list[str]) -> str:
        return "[" + ", ".join(f'"{item}"' for item in items) + "]"

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["exporter"]\n'
        f"only_mutate = {toml_list([module])}\n"
        f"also_copy = {toml_list([name for name in ALSO_COPY if (ROOT / name).exists()])}\n"
        # Every listed test runs, whatever its tier: a module's list names the servers it needs.
        f"pytest_add_cli_args = {toml_list(['-p', 'no:cacheprovider', '-W', 'error'])}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        "use_git_change_detection = false\n"
    )


def prepare(work: Path, module: str) -> None:
    """A copy of the tree in `work` (without the virtualenv and git), with mutmut's configuration for `module`."""
    if work.exists():
        shutil.rmtree(work)
    ignore = shutil.ignore_patterns(".venv", ".git", "mutants", "__pycache__", ".mypy_cache", ".ruff_cache")
    shutil.copytree(ROOT, work, ignore=ignore)
    pyproject = work / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + config(module, TARGETS[module]))


# Set for mutmut and so inherited by every server the tests start: a mutant that
# hangs is killed past mutmut's timeout before its fixtures remove their servers
# (a stopped backend included), so whatever still holds it after the run is ended.
RUN_MARKER = "ORPYCAMCP_MUTATION_RUN"
THROWAWAY_PREFIXES = ("orpycamcp-pg-", "orpycamcp-redis-")


def leftovers(marker: str) -> list[tuple[int, list[str]]]:
    """The processes (id, command line) started under `marker`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            command = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if f"{RUN_MARKER}={marker}".encode() in environ:
            found.append((int(proc.name), command))
    return found


def end_leftovers(marker: str) -> int:
    """Ends the servers a hung mutant left, and removes their throwaway directories; how many processes."""
    found = leftovers(marker)
    directories = set()
    for pid, command in found:
        for flag in ("-D", "--dir"):
            if flag in command[:-1]:
                directory = Path(command[command.index(flag) + 1])
                base = directory.parent if directory.name == "data" else directory
                if base.name.startswith(THROWAWAY_PREFIXES):
                    directories.add(base)
        for sig in (signal.SIGCONT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
    return len(found)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devkit.mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("module", nargs="?", choices=sorted(TARGETS))
    parser.add_argument("--list", action="store_true", help="the modules and their tests")
    parser.add_argument("--work", type=Path, help="where the copy lives (kept); default: a temporary directory")
    parser.add_argument("--mutmut", default=shutil.which("mutmut") or "mutmut", help="the mutmut command")
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested at once")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help=(
            "only the mutants whose name matches"
            " (mutmut's names: 'exporter.sources.postgres.source.*_check_session__*')"
        ),
    )
    args = parser.parse_args(argv)
    if args.list or args.module is None:
        for module, tests in TARGETS.items():
            print(module, " ".join(tests))
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="mutation-"))
    try:
        prepare(work, args.module)
        marker = str(work)
        command = [args.mutmut, "run", "--max-children", str(args.max_children), *args.only]
        try:
            subprocess.run(command, cwd=work, env={**os.environ, RUN_MARKER: marker}, check=False)
        finally:
            ended = end_leftovers(marker)
            if ended:
                print(f"ended {ended} processes left by mutants that hung (their servers)", file=sys.stderr)
        listing = subprocess.run(
            [args.mutmut, "results", "--all", "true"], cwd=work, capture_output=True, text=True, check=False
        ).stdout
        if args.only:
            listing = "\n".join(
                line
                for line in listing.splitlines()
                if any(fnmatch.fnmatch(line.strip().split(":")[0], p) for p in args.only)
            )
        print(listing)
        return 0
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
