"""What an option is: its flag, the one name it goes by, the environment variables
it is read from, how its text is parsed and bounded, its default and its help; and
the parsers every kind of option shares (seconds, counts, choices, switches, names).
`exporter.settings` declares every option once with `option()`; the command line,
the validation and docs/configuration.md are derived from those declarations.

The flags are spelled here, plain data below everything else, so that an error or
a hint names the flag to set without importing the settings. One style for every
flag, Prometheus' own: a component, a dot, then the setting in dashed words
(`--database.batch-size`); a flag of one word has no component (`--ttl`).

One name per setting, from flag to component: an option's name (its `Settings`
field, its key wherever options are passed by name) is its flag without the
leading dashes, dots and dashes made underscores (`--database.max-queries-per-connection`
is `database_max_queries_per_connection`, `--web.config.file` `web_config_file`),
and a component's own setting is the part after the component's dot
(`PostgresSettings.max_queries_per_connection`). The names are derived from the
flags (the other way is ambiguous: `--web.config.file` but
`--redis.tls-ca-file`), and written once more as a type, `OptionName`, so that
the type checker refuses a misspelt name wherever code passes one
(`flag_of("database_ulr")`); a name of that type that is not its flag's, two
flags of one name, a deprecated spelling of no option, or a field without a
flag fail at import.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, cast, get_args

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

FLAGS: tuple[str, ...] = (
    "--web.listen-address",
    "--database.url",
    "--database.url-file",
    "--redis.url",
    "--redis.url-file",
    "--redis.tls-ca-file",
    "--redis.tls-cert-file",
    "--redis.tls-key-file",
    "--redis.tls-insecure-skip-verify",
    "--signals",
    "--ttl",
    "--deadline",
    "--signals.ttl",
    "--signals.deadline",
    "--database.max-connections",
    "--database.batch-size",
    "--database.idle-close",
    "--database.max-queries-per-connection",
    "--database.pool-mode",
    "--database.replica-max-staleness",
    "--redis.replica-max-staleness",
    "--redis.sentinel-majority",
    "--backlogs.config-file",
    "--web.config.file",
    "--web.max-connections",
    "--web.request-head-timeout",
    "--web.trusted-proxies",
    "--log.format",
    "--log.level",
)

# The names of FLAGS, in their order (checked at import: `named`).
OptionName = Literal[
    "web_listen_address",
    "database_url",
    "database_url_file",
    "redis_url",
    "redis_url_file",
    "redis_tls_ca_file",
    "redis_tls_cert_file",
    "redis_tls_key_file",
    "redis_tls_insecure_skip_verify",
    "signals",
    "ttl",
    "deadline",
    "signals_ttl",
    "signals_deadline",
    "database_max_connections",
    "database_batch_size",
    "database_idle_close",
    "database_max_queries_per_connection",
    "database_pool_mode",
    "database_replica_max_staleness",
    "redis_replica_max_staleness",
    "redis_sentinel_majority",
    "backlogs_config_file",
    "web_config_file",
    "web_max_connections",
    "web_request_head_timeout",
    "web_trusted_proxies",
    "log_format",
    "log_level",
]
OPTION_NAMES: tuple[OptionName, ...] = get_args(OptionName)

# Earlier spellings still accepted, each a deprecated alias of the option of the
# same name (`--log-level` of `--log.level`: both are `log_level`, both read
# ORPYCAMCP_LOG_LEVEL). Using one logs a warning once at start.
DEPRECATED_FLAGS: tuple[str, ...] = (
    "--database-url",
    "--database-url-file",
    "--redis-url",
    "--redis-url-file",
    "--log-format",
    "--log-level",
)

# The one rule for environment variables: this prefix, then the option's name, upper case.
ENV_PREFIX = "ORPYCAMCP_"


def field_of(flag: str) -> str:
    """The name of the option `flag` sets: the flag without its leading dashes,
    dots and dashes turned into underscores."""
    return re.sub(r"[.-]", "_", flag.lstrip("-"))


def env_name(flag: str) -> str:
    return ENV_PREFIX + field_of(flag).upper()


def named(
    flags: tuple[str, ...], deprecated: tuple[str, ...], names: tuple[OptionName, ...] = OPTION_NAMES
) -> dict[OptionName, str]:
    """Each flag by the name of its option; raises at import on two flags of one
    name, a deprecated spelling that names no option, or `names` (the type's) that
    are not the flags' names in their order."""
    derived = tuple(field_of(flag) for flag in flags)
    twice = sorted(flag for flag in flags if derived.count(field_of(flag)) > 1)
    orphans = sorted(old for old in deprecated if field_of(old) not in derived)
    if twice or orphans or derived != names:
        raise ValueError(
            f"flags of an option named twice: {twice}; deprecated spellings of no option: {orphans};"
            f" the names of OptionName, not the flags' in their order: {sorted(set(names) ^ set(derived))}"
        )
    return dict(zip(names, flags, strict=True))


_FLAG_OF = named(FLAGS, DEPRECATED_FLAGS)


def name_of(text: str) -> OptionName:
    """`text` as the name of an option, where it comes from data (a field's name, a
    hint's template); KeyError when no option has it."""
    if text not in _FLAG_OF:
        raise KeyError(f"no option is named {text!r}")
    return text  # an OptionName: a key of _FLAG_OF


def flag_of(name: OptionName) -> str:
    """The command-line flag of the option `name`."""
    return _FLAG_OF[name]


def deprecated_spellings(name: OptionName) -> tuple[str, ...]:
    """The deprecated spellings still read for the option `name`."""
    return tuple(old for old in DEPRECATED_FLAGS if field_of(old) == name)


def setting(name: OptionName, value: str) -> str:
    """How to give the option `name` this value, by flag and by environment."""
    flag = flag_of(name)
    return f"{flag} {value} ({env_name(flag)}={value})"


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
class Switch:
    kind: str = "true or false"
    choices: tuple[str, ...] = ("true", "false")

    def __call__(self, raw: str, env: Mapping[str, str]) -> bool:
        return Choice(("true", "false", "1", "0", "yes", "no"))(raw, env) in ("true", "1", "yes")


@dataclass(frozen=True)
class Names:
    kind: str = "comma-separated names"

    def __call__(self, raw: str, env: Mapping[str, str]) -> tuple[str, ...]:
        names = tuple(name.strip() for name in raw.split(",") if name.strip())
        if not names:
            raise Refused("names no signal")
        return names


# An option's name until `declared` gives it its Settings field's: an option is
# written as a field's default, before the field has its name.
_NOT_YET_NAMED = cast(OptionName, "")


@dataclass(frozen=True)
class Option(Generic[T]):
    """One option, declared once.

    `default` is text, as it would be given on the command line, and goes through
    `parse` like any given value; None means unset (or, with `default_doc`, a
    default derived from other options by a rule of exporter.loading).
    """

    parse: Parser[T]
    help: str
    metavar: str = "VALUE"
    default: str | None = None
    default_doc: str | None = None
    aliases: tuple[str, ...] = ()
    name: OptionName = _NOT_YET_NAMED

    @property
    def flag(self) -> str:
        return flag_of(self.name)

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
    secret: bool = False,
) -> Any:
    """A settings field declared as an option (see Option; its flag is in FLAGS);
    a secret one is left out of repr()."""
    declared = Option(parse, help, metavar, default, default_doc, aliases)
    return dataclasses.field(metadata={OPTION_KEY: declared}, repr=not secret)


def declared(settings_class: type[Any]) -> tuple[Option[Any], ...]:
    """The options declared by the fields of a settings dataclass, in their order:
    every field is the name of a flag, every flag names a field."""
    fields = [item for item in dataclasses.fields(settings_class) if OPTION_KEY in item.metadata]
    names = {item.name for item in fields}
    if names != set(_FLAG_OF):
        raise ValueError(
            f"options without a flag: {sorted(names - set(_FLAG_OF))};"
            f" flags without an option: {sorted(set(_FLAG_OF) - names)}"
        )
    return tuple(dataclasses.replace(item.metadata[OPTION_KEY], name=name_of(item.name)) for item in fields)
