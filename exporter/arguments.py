"""The command line, derived from the option declarations: every command that
reads settings takes every option. Owned here, apart from the commands, because
both the CLI and the health check (which reads the serving process's own
command line) parse it."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from exporter.options import OptionName, deprecated_spellings, field_of, flag_of, name_of
from exporter.settings import OPTIONS, OPTIONS_BY_NAME
from registry import VERSION

PROG = "orpycamcp-exporter"
COMMANDS = ("serve", "demo", "diagnose", "check-config", "metrics", "contract", "healthcheck")
# Commands that read the settings; `metrics` and `contract` read the declarations file only.
DECLARATIONS_COMMANDS = {
    "metrics": "print the registry: every family, its labels and their values",
    "contract": "print the data contract the exporter reads, as one YAML document",
}
SETTINGS_COMMANDS = {
    "serve": "serve /metrics (the default)",
    "demo": "serve against a throwaway demo PostgreSQL (and Redis)",
    "diagnose": "measure every signal once and explain any failure",
    "check-config": "validate the settings and the web config, exactly as serve does, then exit",
    "healthcheck": "probe the serving exporter's /-/healthy: exit 0 or 1",
}


# Where the parsed namespace keeps the deprecated spellings given (see `deprecated_used`).
DEPRECATED_DEST = "deprecated_flags"


class _DeprecatedSpelling(argparse._AppendAction):
    """An old spelling of an option: its value goes where the option's own flag puts
    it (so giving both is refused as given twice), and the spelling is noted."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        super().__call__(parser, namespace, values, option_string)
        used: list[str] = getattr(namespace, DEPRECATED_DEST, None) or []
        if option_string is not None and option_string not in used:
            used.append(option_string)
        setattr(namespace, DEPRECATED_DEST, used)


def _help(name: OptionName) -> str:
    item = OPTIONS_BY_NAME[name]
    choices: tuple[str, ...] | None = getattr(item.parse, "choices", None)
    accepts = f" (one of: {', '.join(choices)})" if choices else ""
    default = f" (default: {item.shown_default})" if item.shown_default is not None else ""
    formerly = "".join(f" (formerly {old}, still read, deprecated)" for old in deprecated_spellings(name))
    return f"{item.help}{accepts}{default}{formerly} [env {' or '.join(item.envs)}]"


def _add_options(parser: argparse.ArgumentParser, names: Sequence[OptionName]) -> None:
    for name in names:
        item = OPTIONS_BY_NAME[name]
        parser.add_argument(
            item.flag,
            dest=item.name,
            metavar=item.metavar,
            # Every occurrence kept: an option given twice is refused, not silently the last.
            action="append",
            default=None,
            help=_help(name),
        )
        for old in deprecated_spellings(name):
            parser.add_argument(
                old, dest=item.name, metavar=item.metavar, action=_DeprecatedSpelling, help=argparse.SUPPRESS
            )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Prometheus exporter for the platform's silent backlogs.")
    parser.add_argument("--version", action="version", version=f"{PROG} {VERSION}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    every = [item.name for item in OPTIONS]
    for command in COMMANDS:
        if command in DECLARATIONS_COMMANDS:
            _add_options(commands.add_parser(command, help=DECLARATIONS_COMMANDS[command]), ["backlogs_config_file"])
        else:
            _add_options(commands.add_parser(command, help=SETTINGS_COMMANDS[command]), every)
    return parser


def with_command(arguments: Sequence[str]) -> list[str]:
    """The arguments with `serve` first when no command is given."""
    listed = list(arguments)
    if not listed or listed[0] not in (*COMMANDS, "-h", "--help", "--version"):
        listed.insert(0, "serve")
    return listed


def option_values(parsed: argparse.Namespace) -> dict[str, Any]:
    """Each option's occurrences on the command line (None where not given)."""
    return {item.name: getattr(parsed, item.name, None) for item in OPTIONS}


def deprecated_used(parsed: argparse.Namespace) -> tuple[str, ...]:
    """The deprecated spellings given on the command line, each once, in their order."""
    return tuple(getattr(parsed, DEPRECATED_DEST, None) or ())


def replacement(old: str) -> str:
    """The flag that replaces the deprecated spelling `old`."""
    return flag_of(name_of(field_of(old)))


def command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            chosen: argparse.ArgumentParser = action.choices[command]
            return chosen
    return parser
