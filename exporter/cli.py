"""Command line: `orpycamcp-exporter COMMAND [options]`, `serve` when no command is given.

`serve`, `check-config`, `diagnose` and `demo` read the settings through one
path (exporter.loading.load): `check-config` refuses exactly what `serve`
refuses, with the same words, every invalid setting on a line of its own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from exporter import logs
from exporter.arguments import (
    PROG,
    build_parser,
    command_parser,
    deprecated_used,
    option_values,
    replacement,
    with_command,
)
from exporter.backlogs import load_declarations
from exporter.declarations import NO_DECLARATIONS
from exporter.errors import ConfigError, InvalidSettings, ListenError
from exporter.http.listen import show_address
from exporter.loading import load, load_some
from exporter.settings import OPTIONS_BY_NAME, Settings, describe
from exporter.tools.reference import metrics_table


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(with_command(sys.argv[1:] if argv is None else argv))
    if unknown:
        # The command's own usage, not the top-level one: that is where the option was mistyped.
        command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(unknown)}")
    values = option_values(args)
    deprecated = deprecated_used(args)
    if args.command == "healthcheck":
        from exporter.tools.healthcheck import healthcheck

        return healthcheck(values, os.environ)
    try:
        if args.command == "metrics":
            print(_metrics(load_some(values, os.environ, ["backlogs_config_file"])["backlogs_config_file"]), end="")
            return 0
        if args.command == "contract":
            print(_contract(load_some(values, os.environ, ["backlogs_config_file"])["backlogs_config_file"]), end="")
            return 0
        if args.command == "demo":
            from exporter.tools.demo import run_demo

            return run_demo(values)
        settings = load(values, os.environ)
    except (ConfigError, ListenError) as exc:
        return refuse(exc, values)
    if args.command == "check-config":
        logs.configure(settings.log_format, settings.log_level)
        warn_deprecated(deprecated)
        print(f"configuration valid: {settings.summary(show_address(*settings.web_listen_address))}")
        return 0
    if args.command == "diagnose":
        from exporter.tools.diagnose import diagnose

        logs.configure(settings.log_format, "error")
        return asyncio.run(diagnose(settings, print))
    return _serve(settings, values, deprecated)


def warn_deprecated(spellings: Sequence[str]) -> None:
    """One warning for each deprecated flag spelling given, once, at start."""
    for old in spellings:
        logging.getLogger(logs.STARTUP_LOGGER).warning(
            "%s is deprecated and will be removed: use %s (same value, same environment variable)",
            old,
            replacement(old),
        )


def refuse(exc: ConfigError | ListenError, values: Mapping[str, Any]) -> int:
    """Exit 2 with every refusal on a line of its own, in the configured log format when it is valid."""
    errors = exc.errors if isinstance(exc, InvalidSettings) else (exc,)
    try:
        log_format = load_some(values, os.environ, ["log_format"])["log_format"]
    except ConfigError:  # itself invalid: its default
        log_format = OPTIONS_BY_NAME["log_format"].default
    logs.startup_failure([str(error) for error in errors], log_format, PROG)
    return 2


def _metrics(backlogs_config_file: str | None) -> str:
    """The registry table: the built-in families and, given a backlogs file, the declared ones."""
    from exporter.service import declared_catalog

    if not backlogs_config_file:
        return metrics_table()
    declared = load_declarations(backlogs_config_file, describe("backlogs_config_file"))
    registry = declared_catalog(declared).registry
    return metrics_table(registry, {b.name: b.help for b in declared.backlogs})


def _contract(backlogs_config_file: str | None) -> str:
    """The data contract: the built-in signals' and, given a declarations file, what it declares."""
    from exporter.tools.contract import contract_yaml

    declared = (
        load_declarations(backlogs_config_file, describe("backlogs_config_file"))
        if backlogs_config_file
        else NO_DECLARATIONS
    )
    return contract_yaml(declared)


def _serve(settings: Settings, values: Mapping[str, Any], deprecated: Sequence[str]) -> int:
    from exporter.http.server import serve

    logs.configure(settings.log_format, settings.log_level)
    warn_deprecated(deprecated)
    try:
        return serve(settings)
    except ListenError as exc:
        return refuse(exc, values)
