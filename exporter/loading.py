"""Settings loaded: every option read (command line, then environment, then
default: exporter.precedence), the rules between options applied
(exporter.option_rules), the side files read by their own modules (the
declarations, the web configuration), and every invalid setting reported at
once, as one InvalidSettings. `serve`, `check-config`, `diagnose` and `demo`
all load through `load`; `load_some` reads a few options alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from exporter import option_rules
from exporter.backlogs import load_declarations
from exporter.declarations import NO_DECLARATIONS, Declarations
from exporter.http.webconfig import WebConfig, load_web_config
from exporter.precedence import OptionReading
from exporter.settings import OPTIONS_BY_NAME, Settings, describe


def _declarations(reading: OptionReading) -> Declarations:
    path = reading.values["backlogs_config_file"]
    if not path:
        return NO_DECLARATIONS
    declared: Declarations | None = reading.check(
        "backlogs_config_file", lambda: load_declarations(path, describe("backlogs_config_file"))
    )
    return declared or NO_DECLARATIONS


def _web_config(reading: OptionReading) -> WebConfig:
    path = reading.values["web_config_file"]
    if not path:
        return WebConfig()
    web: WebConfig | None = reading.check("web_config_file", lambda: load_web_config(path))
    return web if web is not None else WebConfig()  # when refused, `done` raises before it is used


def load(values: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
    """Settings from CLI values (None where not given), then the environment, then the
    defaults; InvalidSettings lists every invalid setting."""
    reading = OptionReading(OPTIONS_BY_NAME, values, env, OPTIONS_BY_NAME)
    parsed = reading.values
    option_rules.deadline_below_ttl(reading)
    option_rules.idle_close_from_ttl(reading)
    configured = option_rules.configured_sources(reading)
    parsed["database_url"] = option_rules.url_or_file(reading, "database_url", "database_url_file")
    parsed["redis_url"] = option_rules.url_or_file(reading, "redis_url", "redis_url_file")
    redis_tls = option_rules.redis_tls(reading, configured)
    declared = _declarations(reading)
    web = _web_config(reading)
    parsed["signals"] = option_rules.enabled_signals(reading, configured, declared.backlogs, declared.streams)
    cadences = option_rules.signal_cadences(reading, parsed["signals"] or (), declared.backlogs, declared.streams)
    reading.done()
    return Settings(
        **parsed,
        backlogs=declared.backlogs,
        streams=declared.streams,
        tenants=declared.tenants,
        tables=declared.tables,
        audit=declared.audit,
        bus=declared.bus,
        redis_tls=redis_tls,
        web=web,
        cadences=cadences,
    )


def load_some(values: Mapping[str, Any], env: Mapping[str, str], names: Iterable[str]) -> Mapping[str, Any]:
    """Only the named options (e.g. the health check's address and web config), parsed;
    InvalidSettings lists every invalid one."""
    reading = OptionReading(OPTIONS_BY_NAME, values, env, names)
    reading.done()
    return reading.values
