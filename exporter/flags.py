"""The command-line flag of every option, by the `Settings` field that declares it:
the one place a flag is spelled. Plain data below everything else, so that an
error or a hint can name the flag to set without importing the settings (which
import most of the package). One style for every flag, Prometheus' own: a
component, a dot, then the setting in dashed words (`--database.batch-size`); a
flag of one word has no component (`--ttl`).

One name per setting, from flag to component: the `Settings` field is the flag
without its leading dashes, dots and dashes made underscores
(`--database.max-queries-per-connection` is `database_max_queries_per_connection`,
`--web.config.file` is `web_config_file`, `--ttl` is `ttl`), and the component's
own setting is the part after the component's dot (`PostgresSettings.max_queries_per_connection`,
the web server's `request_head_timeout`). A table that breaks the rule fails at
import; `exporter.options.declared` gives each declared option its flag from
here, and fails at import when a field has none or a flag no field.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from exporter.options import env_name, field_of

FLAGS: Mapping[str, str] = MappingProxyType(
    {
        "web_listen_address": "--web.listen-address",
        "database_url": "--database.url",
        "database_url_file": "--database.url-file",
        "redis_url": "--redis.url",
        "redis_url_file": "--redis.url-file",
        "redis_tls_ca_file": "--redis.tls-ca-file",
        "redis_tls_cert_file": "--redis.tls-cert-file",
        "redis_tls_key_file": "--redis.tls-key-file",
        "redis_tls_insecure_skip_verify": "--redis.tls-insecure-skip-verify",
        "signals": "--signals",
        "ttl": "--ttl",
        "deadline": "--deadline",
        "signals_ttl": "--signals.ttl",
        "signals_deadline": "--signals.deadline",
        "database_max_connections": "--database.max-connections",
        "database_batch_size": "--database.batch-size",
        "database_idle_close": "--database.idle-close",
        "database_max_queries_per_connection": "--database.max-queries-per-connection",
        "database_pool_mode": "--database.pool-mode",
        "database_replica_max_staleness": "--database.replica-max-staleness",
        "redis_replica_max_staleness": "--redis.replica-max-staleness",
        "redis_sentinel_majority": "--redis.sentinel-majority",
        "backlogs_config_file": "--backlogs.config-file",
        "web_config_file": "--web.config.file",
        "web_max_connections": "--web.max-connections",
        "web_request_head_timeout": "--web.request-head-timeout",
        "web_trusted_proxies": "--web.trusted-proxies",
        "log_format": "--log.format",
        "log_level": "--log.level",
    }
)


# Earlier spellings still accepted, each the deprecated alias of the option (its
# Settings field) that now has a Prometheus-style flag: a word for the component,
# a dot, then the setting (`--log.level`, as every Prometheus exporter spells it).
# Using one logs a warning once at start; the environment variables did not change
# (dots and dashes both become underscores).
DEPRECATED_FLAGS: Mapping[str, str] = MappingProxyType(
    {
        "--database-url": "database_url",
        "--database-url-file": "database_url_file",
        "--redis-url": "redis_url",
        "--redis-url-file": "redis_url_file",
        "--log-format": "log_format",
        "--log-level": "log_level",
    }
)


def _one_rule(flags: Mapping[str, str]) -> None:
    broken = {name: flag for name, flag in flags.items() if field_of(flag) != name}
    if broken:
        raise ValueError(f"options not named after their flags: {broken}")


_one_rule(FLAGS)


def flag_of(name: str) -> str:
    """The command-line flag of the option `name` (its Settings field)."""
    return FLAGS[name]


def deprecated_spellings(name: str) -> tuple[str, ...]:
    """The deprecated spellings still read for the option `name` (its Settings field)."""
    return tuple(old for old, of in DEPRECATED_FLAGS.items() if of == name)


def setting(name: str, value: str) -> str:
    """How to give the option `name` this value, by flag and by environment."""
    flag = FLAGS[name]
    return f"{flag} {value} ({env_name(flag)}={value})"
