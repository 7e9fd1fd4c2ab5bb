"""What an option is: its flag, the environment variables it is read from, how its
text is parsed and bounded, its default, its help, and the component setting it
feeds. `exporter.settings` declares every option once with `option()`; the
command line, the validation, the component settings and docs/configuration.md
are all derived from those declarations.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# The one rule for environment variables: this prefix, then the flag without its
# dashes, dots and dashes turned into underscores, upper case.
ENV_PREFIX = "ORPYCAMCP_"


def env_name(flag: str) -> str:
    return ENV_PREFIX + re.sub(r"[.-]", "_", flag.lstrip("-")).upper()


class Refused(ValueError):
    """A value an option's parser refuses; `problem` says why, without quoting a secret."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)


class Parser(Protocol[T_co]):
    """Turns an option's text into its value, or raises Refused; `kind` describes
    what it accepts (type and bounds) for the documentation."""

    @property
    def kind(self) -> str: ...

    def __call__(self, raw: str, env: Mapping[str, str]) -> T_co: ...


@dataclass(frozen=True)
class Seconds:
    kind: str = "seconds > 0"

    def __call__(self, raw: str, env: Mapping[str, str]) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise Refused(f"{raw!r} is not a number of seconds") from None
        if not math.isfinite(value) or value <= 0:
            raise Refused(f"must be a positive number of seconds, got {raw!r}")
        return value


@dataclass(frozen=True)
class Count:
    low: int
    high: int

    @property
    def kind(self) -> str:
        return f"whole number {self.low} to {self.high}"

    def __call__(self, raw: str, env: Mapping[str, str]) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise Refused(f"{raw!r} is not a whole number") from None
        if not self.low <= value <= self.high:
            raise Refused(f"must be between {self.low} and {self.high}, got {value}")
        return value


@dataclass(frozen=True)
class Choice:
    choices: tuple[str, ...]

    @property
    def kind(self) -> str:
        return " or ".join(self.choices)

    def __call__(self, raw: str, env: Mapping[str, str]) -> str:
        value = raw.lower()
        if value not in self.choices:
            raise Refused(f"{raw!r} is not one of {', '.join(self.choices)}")
        return value


@dataclass(frozen=True)
class Text:
    """Any text, kept as given (a path, a list parsed later against other options)."""

    kind: str = "text"

    def __call__(self, raw: str, env: Mapping[str, str]) -> str:
        return raw


@dataclass(frozen=True)
class Option(Generic[T]):
    """One option, declared once.

    `default` is text, as it would be given on the command line, and goes through
    `parse` like any given value; None means unset (or, with `default_doc`, a
    default derived from other options by a rule of exporter.settings). `flag`
    comes from exporter.flags (filled in by `declared`). `feeds`
    names the component settings ("Class.field") that take the value.
    """

    flag: str
    parse: Parser[T]
    help: str
    metavar: str = "VALUE"
    default: str | None = None
    default_doc: str | None = None
    aliases: tuple[str, ...] = ()
    feeds: tuple[str, ...] = ()
    name: str = ""  # the Settings field that declares it, filled in by `declared`

    @property
    def env(self) -> str:
        return env_name(self.flag)

    @property
    def envs(self) -> tuple[str, ...]:
        """Every environment variable it is read from, the rule's name first."""
        return (self.env, *self.aliases)

    def describe(self) -> str:
        return f"{self.flag} ({self.env})"

    @property
    def shown_default(self) -> str | None:
        return self.default_doc if self.default is None else self.default


OPTION_KEY = "option"


def option(
    parse: Parser[Any],
    help: str,
    *,
    metavar: str = "VALUE",
    default: str | None = None,
    default_doc: str | None = None,
    aliases: tuple[str, ...] = (),
    feeds: tuple[str, ...] = (),
    secret: bool = False,
) -> Any:
    """A settings field declared as an option (see Option; its flag is in exporter.flags);
    a secret one is left out of repr()."""
    declared = Option("", parse, help, metavar, default, default_doc, aliases, feeds)
    return dataclasses.field(metadata={OPTION_KEY: declared}, repr=not secret)


def declared(settings_class: type[Any], flags: Mapping[str, str]) -> tuple[Option[Any], ...]:
    """The options declared by the fields of a settings dataclass, in their order,
    each with its flag from `flags` (by field name): every field has one, every flag a field."""
    fields = [item for item in dataclasses.fields(settings_class) if OPTION_KEY in item.metadata]
    names = [item.name for item in fields]
    if set(names) != set(flags):
        raise ValueError(
            f"options without a flag: {sorted(set(names) - set(flags))};"
            f" flags without an option: {sorted(set(flags) - set(names))}"
        )
    return tuple(
        dataclasses.replace(item.metadata[OPTION_KEY], name=item.name, flag=flags[item.name]) for item in fields
    )


def feeding(options: tuple[Option[Any], ...], values: object, component: type[T]) -> dict[str, Any]:
    """The keyword arguments for `component` taken from the options that feed it."""
    prefix = component.__name__ + "."
    return {
        target.removeprefix(prefix): getattr(values, item.name)
        for item in options
        for target in item.feeds
        if target.startswith(prefix)
    }
