"""Settings loaded: every option read, the rules between options applied, and
every refusal reported at once, as one InvalidSettings.

Each option's text is the command line's, else its environment variables' (the
rule's name and its aliases, which must agree), else its declared default, parsed
by its parser. The rules that involve several options follow: the deadline below
the TTL, the idle close derived from the TTL, a URL or its file, the Redis TLS
files against the Redis URL, the signals against the configured sources, each
signal's own TTL and deadline. The side files are read by their own modules (the
declarations, the web configuration). `serve`, `check-config`, `diagnose` and
`demo` all load through `load`; `load_some` reads a few options alone."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from exporter.backlogs import load_declarations
from exporter.cadence import INHERITED, Cadence, DeclaredCadence, resolved
from exporter.declarations import NO_DECLARATIONS, Backlog
from exporter.declared_streams import DeclaredStreams
from exporter.errors import BacklogConfigError, ConfigError, InvalidSettings
from exporter.http.webconfig import WebConfig, load_web_config
from exporter.options import Option, OptionName, Refused
from exporter.secret_file import read_secret
from exporter.settings import IDLE_CLOSE_TTLS, OPTIONS_BY_NAME, Settings, describe
from exporter.signals import BY_NAME as SIGNALS_BY_NAME
from exporter.signals import Source
from exporter.sources.redis.tls import NO_TLS, RedisTls, TlsFileError, load_tls
from exporter.sources.redis.url import parse_redis_url

T = TypeVar("T")


class OptionReading:
    """The options' texts (flag, then environment, then default), parsed; every refusal kept.

    `values` are the command line's (None where not given); `names` the options to read."""

    def __init__(self, values: Mapping[str, Any], env: Mapping[str, str], names: Iterable[OptionName]) -> None:
        self.env = env
        self.errors: list[ConfigError] = []
        unknown = set(values) - set(OPTIONS_BY_NAME)
        if unknown:
            # A caller's misspelt option would otherwise be read as not given.
            raise KeyError(f"not options: {', '.join(sorted(unknown))}")
        self.values: dict[OptionName, Any] = {
            name: self._parse(OPTIONS_BY_NAME[name], values.get(name)) for name in names
        }

    def refuse(self, name: OptionName, problem: str) -> None:
        self.errors.append(ConfigError(describe(name), problem))

    def _text(self, item: Option[Any], given: Any) -> str | None:
        if isinstance(given, list | tuple):
            if len(given) > 1:
                # The values are not repeated: one of them may be a URL with its password.
                self.refuse(item.name, f"given {len(given)} times: give it once")
                return None
            given = given[0] if given else None
        if given is not None:
            return str(given)
        present = [name for name in item.envs if name in self.env]
        # An empty variable (a template left blank) does not disagree with a set one.
        found = {name: self.env[name] for name in present if self.env[name] != ""}
        if len(set(found.values())) > 1:
            self.refuse(item.name, f"{' and '.join(found)} disagree: set one of them")
            return None
        if found:
            return next(iter(found.values()))
        return "" if present else item.default

    def _parse(self, item: Option[Any], given: Any) -> Any:
        text = self._text(item, given)
        # Given empty: unset, unless the option has a default (then it is refused as it stands).
        if text is None or (text == "" and item.default is None):
            return None
        raw = text
        return self.check(item.name, lambda: item.parse(raw, self.env))

    def check(self, name: OptionName, check: Callable[[], Any]) -> Any:
        """check(), a ConfigError or Refused kept as a refusal of option `name`."""
        try:
            return check()
        except Refused as exc:
            self.refuse(name, exc.problem)
        except ConfigError as exc:
            self.errors.append(exc)
        return None

    def done(self) -> None:
        if self.errors:
            raise InvalidSettings(tuple(self.errors))


def deadline_below_ttl(reading: OptionReading) -> None:
    ttl, deadline = reading.values["ttl"], reading.values["deadline"]
    if ttl is not None and deadline is not None and deadline >= ttl:
        reading.refuse("deadline", f"must be below the TTL ({deadline:g} >= {ttl:g})")


def idle_close_from_ttl(reading: OptionReading) -> None:
    """Unused connections are closed after `IDLE_CLOSE_TTLS` TTLs, unless set."""
    ttl = reading.values["ttl"]
    if reading.values["database_idle_close"] is None and ttl is not None:
        reading.values["database_idle_close"] = IDLE_CLOSE_TTLS * ttl


def _given(reading: OptionReading, *names: OptionName) -> bool:
    refused = {describe(name) for name in names}
    return any(reading.values[name] is not None for name in names) or any(
        error.setting in refused for error in reading.errors
    )


def configured_sources(reading: OptionReading) -> dict[Source, bool]:
    """Whether each source is configured, by its URL or its file. A URL given but
    refused counts as configured: it is not reported a second time as missing."""
    return {
        Source.POSTGRES: _given(reading, "database_url", "database_url_file"),
        Source.REDIS: _given(reading, "redis_url", "redis_url_file"),
    }


def url_or_file(reading: OptionReading, url_name: OptionName, file_name: OptionName) -> str | None:
    """The URL given, or read from its file (parsed like the URL); never both."""
    url, path = reading.values[url_name], reading.values[file_name]
    if path is None:
        return url  # type: ignore[no-any-return]
    if url is not None:
        reading.refuse(url_name, f"give it or {describe(file_name)}, not both")
        return None

    def from_file() -> str:
        text = read_secret(path)
        try:
            parsed: str = OPTIONS_BY_NAME[url_name].parse(text, reading.env)
        except Refused as exc:
            raise Refused(f"{path}: {exc.problem}") from None
        return parsed

    return reading.check(file_name, from_file)  # type: ignore[no-any-return]


def _tls_files(parsed: Mapping[OptionName, Any]) -> RedisTls:
    """The TLS flags, their files read and parsed now; only with a TLS URL."""
    tls = RedisTls(
        ca_file=parsed["redis_tls_ca_file"],
        cert_file=parsed["redis_tls_cert_file"],
        key_file=parsed["redis_tls_key_file"],
        insecure_skip_verify=bool(parsed["redis_tls_insecure_skip_verify"]),
    )
    if not tls.given:
        return tls
    files: dict[str, OptionName] = {
        "ca_file": "redis_tls_ca_file",
        "cert_file": "redis_tls_cert_file",
        "key_file": "redis_tls_key_file",
    }
    url = parsed["redis_url"]
    if url is None or not parse_redis_url(url).tls:
        flag: OptionName = next(
            (name for field, name in files.items() if getattr(tls, field)), "redis_tls_insecure_skip_verify"
        )
        raise ConfigError(describe(flag), "TLS to Redis needs a rediss:// URL (rediss+sentinel://, rediss+cluster://)")
    try:
        load_tls(tls)
    except TlsFileError as exc:
        raise ConfigError(describe(files[exc.which]), str(exc)) from None
    return tls


def redis_tls(reading: OptionReading, configured: Mapping[Source, bool]) -> RedisTls:
    """The Redis TLS settings, held to the Redis URL (once its file, if any, is read)."""
    # A Redis URL given but refused is reported already: its TLS flags are not judged against it.
    if configured[Source.REDIS] and reading.values["redis_url"] is None:
        return NO_TLS
    return reading.check("redis_tls_ca_file", lambda: _tls_files(reading.values)) or NO_TLS


def enabled_signals(
    reading: OptionReading, configured: Mapping[Source, bool], backlogs: tuple[Backlog, ...], streams: DeclaredStreams
) -> tuple[str, ...]:
    """The signals to enable: those given, or every one whose source is configured;
    each held to its source, in the registry's order."""
    given: tuple[str, ...] | None = reading.values["signals"]
    # Declared backlogs read PostgreSQL, after the built-in signals.
    sources = {name: signal.source for name, signal in SIGNALS_BY_NAME.items()}
    sources.update((backlog.name, Source.POSTGRES) for backlog in backlogs)
    # Stream signals declared apart read Redis, after the backlogs.
    sources.update((signal.name, Source.REDIS) for signal in streams.signals)
    if backlogs and not configured[Source.POSTGRES]:
        reading.refuse("database_url", f"the declared backlogs ({describe('backlogs_config_file')}) need it")
    if streams and not configured[Source.REDIS]:
        reading.refuse("redis_url", f"the declared streams ({describe('backlogs_config_file')}) need it")
    if given is None:
        enabled = tuple(name for name, source in sources.items() if configured[source])
        # Declarations whose source is missing were refused above, naming it: once per cause.
        if not enabled and not backlogs and not streams:
            reading.refuse("database_url", "no PostgreSQL database or Redis is configured")
        return enabled
    for name in given:
        if name not in sources:
            reading.refuse("signals", f"unknown signal {name!r} (known: {', '.join(sources)})")
        elif not configured[sources[name]]:
            needed: OptionName = "database_url" if sources[name] is Source.POSTGRES else "redis_url"
            reading.refuse(needed, f"signal {name!r} needs it")
    # Registry order, whatever order they were given in.
    return tuple(name for name in sources if name in given)


def _cadence_source(
    name: str, key: str, declared: Mapping[str, DeclaredCadence], given: Mapping[str, Mapping[str, float]]
) -> tuple[str, float] | None:
    """Where the signal's own `key` (ttl or deadline) comes from: "declared" or "flag", and its value."""
    own = getattr(declared.get(name, INHERITED), key)
    if own is not None:
        return "declared", own
    if name in given[key]:
        return "flag", given[key][name]
    return None


def _declared_refusal(name: str, key: str, backlogs: tuple[Backlog, ...], problem: str) -> ConfigError:
    """The refusal naming the declaration's key that sets a signal's cadence."""
    setting = describe("backlogs_config_file")
    if any(backlog.name == name for backlog in backlogs):
        return BacklogConfigError(setting, name, key, problem)
    return BacklogConfigError(setting, None, f"streams.signals.{name}.{key}", problem)


def signal_cadences(
    reading: OptionReading, enabled: tuple[str, ...], backlogs: tuple[Backlog, ...], streams: DeclaredStreams
) -> tuple[tuple[str, Cadence], ...]:
    """Each enabled signal's TTL and deadline where they differ from --ttl and --deadline:
    from its declaration, else from --signals.ttl / --signals.deadline; each deadline below its TTL."""
    ttl, deadline = reading.values["ttl"], reading.values["deadline"]
    declared = {backlog.name: backlog.cadence for backlog in backlogs} | dict(streams.cadences)
    options: dict[str, OptionName] = {"ttl": "signals_ttl", "deadline": "signals_deadline"}
    given = {key: dict(reading.values[option] or ()) for key, option in options.items()}
    # A declarations file refused declares nothing: its signals are not reported a second time as unknown.
    file_refused = any(error.setting.startswith(describe("backlogs_config_file")) for error in reading.errors)
    for key, option in options.items():
        for name in given[key]:
            if name not in enabled and not file_refused:
                reading.refuse(option, f"signal {name!r} is not enabled (enabled: {', '.join(enabled) or 'none'})")
            elif name in enabled and getattr(declared.get(name, INHERITED), key) is not None:
                reading.refuse(
                    option, f"signal {name!r} declares its {key} in {describe('backlogs_config_file')}: set it once"
                )
    if ttl is None or deadline is None:
        return ()  # refused already
    cadences: list[tuple[str, Cadence]] = []
    for name in enabled:
        sources = {key: _cadence_source(name, key, declared, given) for key in options}
        cadence = resolved(
            DeclaredCadence(*(source[1] if source else None for source in sources.values())), ttl, deadline
        )
        if cadence.deadline >= cadence.ttl:
            # Blamed: the signal's own deadline if it has one, else its own TTL.
            key = "deadline" if sources["deadline"] is not None else "ttl"
            blamed = sources[key]
            problem = f"signal {name!r}: its deadline must be below its TTL ({cadence.deadline:g} >= {cadence.ttl:g})"
            if blamed is not None and blamed[0] == "declared":
                reading.errors.append(_declared_refusal(name, key, backlogs, problem))
            else:
                reading.refuse(options[key], problem)
        elif cadence != Cadence(ttl, deadline):
            cadences.append((name, cadence))
    return tuple(cadences)


def _side_file(reading: OptionReading, name: OptionName, read: Callable[[str], T], empty: T) -> T:
    """The file the option `name` names, read by its own module; `empty` when none
    is given, or when it is refused (then `done` raises before it is used)."""
    path = reading.values[name]
    found: T | None = reading.check(name, lambda: read(path)) if path else None
    return empty if found is None else found


def load(values: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
    """Settings from CLI values (None where not given), then the environment, then the
    defaults; InvalidSettings lists every invalid setting."""
    reading = OptionReading(values, env, OPTIONS_BY_NAME)
    parsed = reading.values
    deadline_below_ttl(reading)
    idle_close_from_ttl(reading)
    configured = configured_sources(reading)
    parsed["database_url"] = url_or_file(reading, "database_url", "database_url_file")
    parsed["redis_url"] = url_or_file(reading, "redis_url", "redis_url_file")
    tls = redis_tls(reading, configured)
    declared = _side_file(
        reading,
        "backlogs_config_file",
        lambda path: load_declarations(path, describe("backlogs_config_file")),
        NO_DECLARATIONS,
    )
    web = _side_file(reading, "web_config_file", load_web_config, WebConfig())
    parsed["signals"] = enabled_signals(reading, configured, declared.backlogs, declared.streams)
    cadences = signal_cadences(reading, parsed["signals"] or (), declared.backlogs, declared.streams)
    reading.done()
    return Settings(
        **parsed,
        backlogs=declared.backlogs,
        streams=declared.streams,
        tenants=declared.tenants,
        tables=declared.tables,
        audit=declared.audit,
        bus=declared.bus,
        redis_tls=tls,
        web=web,
        cadences=cadences,
    )


def load_some(
    values: Mapping[str, Any], env: Mapping[str, str], names: Iterable[OptionName]
) -> Mapping[OptionName, Any]:
    """Only the named options (e.g. the health check's address and web config), parsed;
    InvalidSettings lists every invalid one."""
    reading = OptionReading(values, env, names)
    reading.done()
    return reading.values
