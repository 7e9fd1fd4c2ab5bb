"""The exporter-toolkit web configuration file (--web.config.file), the same
format the official Prometheus exporters take: TLS and basic auth.

Parsed and checked completely at start; any problem is a ConfigError (exit 2).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exporter.errors import ConfigError
from exporter.yamlfile import YamlError, parse_yaml, read_capped

SETTING = "--web.config.file"

TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
# Python's ssl module verifies any certificate it requests, so the toolkit's
# "request but do not verify" modes have no faithful equivalent: refused.
CLIENT_AUTH_TYPES = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
TLS_KEYS = {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version", "max_version"}
HTTP_KEYS = {"headers", "http2"}
TOP_KEYS = {"tls_server_config", "basic_auth_users", "http_server_config"}
BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")


def _is_bcrypt(hashed: str) -> bool:
    """$2b$NN$ and 53 characters of salt and hash, NN the cost from 04 to 31."""
    cost = hashed[4:6]
    return (
        hashed.startswith(BCRYPT_PREFIXES)
        and len(hashed) == 60
        and cost.isdigit()
        and 4 <= int(cost) <= 31
        and hashed[6] == "$"
    )


@dataclass(frozen=True)
class TlsConfig:
    cert_file: str
    key_file: str
    client_ca_file: str | None = None
    client_auth: ssl.VerifyMode = ssl.CERT_NONE
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    max_version: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED

    def context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = self.min_version
        context.maximum_version = self.max_version
        context.load_cert_chain(self.cert_file, self.key_file)
        context.verify_mode = self.client_auth
        if self.client_ca_file:
            context.load_verify_locations(self.client_ca_file)
        return context


@dataclass(frozen=True)
class WebConfig:
    tls: TlsConfig | None = None
    basic_auth_users: Mapping[str, bytes] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)


def _problem(detail: str) -> ConfigError:
    return ConfigError(SETTING, detail)


def _mapping(value: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _problem(f"{where} must be a mapping")
    unknown = sorted(set(map(str, value)) - allowed)
    if unknown:
        raise _problem(f"{where}: unknown field {unknown[0]!r}")
    return value


def _file(base: Path, raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise _problem(f"{where} must be a file path")
    path = (base / raw) if not Path(raw).is_absolute() else Path(raw)
    if not path.is_file():
        raise _problem(f"{where}: {path} does not exist")
    return str(path)


def _tls(section: dict[str, Any], base: Path) -> TlsConfig | None:
    if not section:
        return None
    if "cert_file" not in section or "key_file" not in section:
        raise _problem("tls_server_config needs both cert_file and key_file")
    auth_name = section.get("client_auth_type", "NoClientCert")
    if auth_name not in CLIENT_AUTH_TYPES:
        raise _problem(f"client_auth_type {auth_name!r} is not one of {', '.join(CLIENT_AUTH_TYPES)}")
    client_auth = CLIENT_AUTH_TYPES[auth_name]
    ca_file = _file(base, section["client_ca_file"], "client_ca_file") if section.get("client_ca_file") else None
    if client_auth != ssl.CERT_NONE and ca_file is None:
        raise _problem(f"client_auth_type {auth_name} needs client_ca_file")
    versions = {}
    for key, default in (("min_version", "TLS12"), ("max_version", None)):
        name = section.get(key, default)
        if name is None:
            continue
        if name not in TLS_VERSIONS:
            raise _problem(f"{key} {name!r} is not one of {', '.join(TLS_VERSIONS)}")
        versions[key] = TLS_VERSIONS[name]
    tls = TlsConfig(
        cert_file=_file(base, section["cert_file"], "cert_file"),
        key_file=_file(base, section["key_file"], "key_file"),
        client_ca_file=ca_file,
        client_auth=client_auth,
        min_version=versions["min_version"],
        max_version=versions.get("max_version", ssl.TLSVersion.MAXIMUM_SUPPORTED),
    )
    try:
        tls.context()
    except (ssl.SSLError, OSError) as exc:
        raise _problem(f"cannot load the TLS certificate, key or CA: {exc}") from None
    return tls


def _users(section: Any) -> dict[str, bytes]:
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise _problem("basic_auth_users must map user names to bcrypt hashes")
    users: dict[str, bytes] = {}
    for user, hashed in section.items():
        if not isinstance(user, str) or not user or ":" in user:
            raise _problem(f"basic_auth_users: invalid user name {user!r}")
        if not isinstance(hashed, str) or not _is_bcrypt(hashed):
            # The hash itself is never echoed back.
            raise _problem(f"basic_auth_users: the password of {user!r} is not a bcrypt hash")
        users[user] = hashed.encode("ascii")
    return users


def load_web_config(path: str) -> WebConfig:
    file = Path(path)
    try:
        text = read_capped(path)
        document = parse_yaml(text) if text.strip() else {}
    except OSError as exc:
        raise _problem(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, YamlError) as exc:
        raise _problem(f"{path}: {exc}") from None
    top = _mapping(document, path, TOP_KEYS)
    base = file.resolve().parent
    http = _mapping(top.get("http_server_config"), "http_server_config", HTTP_KEYS)
    headers = http.get("headers") or {}
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise _problem("http_server_config.headers must map header names to strings")
    return WebConfig(
        tls=_tls(_mapping(top.get("tls_server_config"), "tls_server_config", TLS_KEYS), base),
        basic_auth_users=_users(top.get("basic_auth_users")),
        headers=dict(headers),
    )
