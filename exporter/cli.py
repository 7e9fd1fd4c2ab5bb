"""Command line: `orpycamcp-exporter COMMAND [options]`, `serve` when no command is given."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from exporter import logs
from exporter.backlogs import load_declarations
from exporter.errors import ConfigError, ListenError
from exporter.http.listen import show_address
from exporter.http.webconfig import WebConfig, load_web_config
from exporter.settings import OPTIONS, OPTIONS_BY_NAME, Settings, describe, load
from exporter.tools.reference import metrics_table
from registry import VERSION

PROG = "orpycamcp-exporter"
COMMANDS = ("serve", "demo", "diagnose", "check-config", "metrics", "healthcheck")


def _add_options(parser: argparse.ArgumentParser) -> None:
    for option in OPTIONS:
        default = f" (default: {option.default})" if option.default is not None else ""
        env = f" [env {option.env}]" if option.env else ""
        parser.add_argument(
            option.flag,
            dest=option.name,
            metavar=option.metavar,
            default=None,
            help=f"{option.help}{default}{env}",
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Prometheus exporter for the platform's silent backlogs.")
    parser.add_argument("--version", action="version", version=f"{PROG} {VERSION}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve /metrics (the default)")
    _add_options(serve)
    demo = commands.add_parser("demo", help="serve against a throwaway demo PostgreSQL (and Redis)")
    _add_options(demo)
    diagnose = commands.add_parser("diagnose", help="measure every signal once and explain any failure")
    _add_options(diagnose)
    check = commands.add_parser("check-config", help="validate the settings and the web config, then exit")
    _add_options(check)
    metrics = commands.add_parser("metrics", help="print the registry: every family, its labels and their values")
    option = OPTIONS_BY_NAME["backlogs_file"]
    metrics.add_argument(
        option.flag, dest=option.name, metavar=option.metavar, default=None, help=f"{option.help} [env {option.env}]"
    )
    healthcheck = commands.add_parser("healthcheck", help="probe the serving exporter's /-/healthy: exit 0 or 1")
    _add_options(healthcheck)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0] not in (*COMMANDS, "-h", "--help", "--version"):
        args_list.insert(0, "serve")
    parser = build_parser()
    args, unknown = parser.parse_known_args(args_list)
    if unknown:
        # The command's own usage, not the top-level one: that is where the option was mistyped.
        _command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(unknown)}")
    values = {option.name: getattr(args, option.name, None) for option in OPTIONS}
    if args.command == "healthcheck":
        from exporter.tools.healthcheck import healthcheck

        return healthcheck(values, os.environ)
    try:
        if args.command == "metrics":
            backlogs_env = OPTIONS_BY_NAME["backlogs_file"].env or ""
            print(_metrics(values.get("backlogs_file") or os.environ.get(backlogs_env)), end="")
            return 0
        if args.command == "demo":
            from exporter.tools.demo import run_demo

            return run_demo(values)
        settings = load(values, os.environ)
        web = load_web_config(settings.web_config_file) if settings.web_config_file else WebConfig()
    except (ConfigError, ListenError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if args.command == "check-config":
        address = show_address(settings.listen_host, settings.listen_port)
        declared = settings.streams
        more = (
            f"; streams declared: {len(declared.consumer_groups)} consumer groups,"
            f" {len(declared.dead_letter_streams)} dead-letter streams"
            if declared
            else ""
        )
        print(f"configuration valid: signals {','.join(settings.signals)} on {address}{more}")
        return 0
    if args.command == "diagnose":
        from exporter.tools.diagnose import diagnose

        logs.configure(settings.log_format, "error")
        return asyncio.run(diagnose(settings, print))
    return _serve(settings, web)


def _command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            chosen: argparse.ArgumentParser = action.choices[command]
            return chosen
    return parser


def _metrics(backlogs_file: str | None) -> str:
    """The registry table: the built-in families and, given a backlogs file, the declared ones."""
    from exporter.service import catalog_of

    if not backlogs_file:
        return metrics_table()
    declared = load_declarations(backlogs_file, describe("backlogs_file"))
    registry = catalog_of(declared.backlogs, declared.streams).registry
    return metrics_table(registry, {b.name: b.help for b in declared.backlogs})


def _serve(settings: Settings, web: WebConfig) -> int:
    from exporter.http.server import serve

    logs.configure(settings.log_format, settings.log_level)
    try:
        return serve(settings, web)
    except ListenError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
