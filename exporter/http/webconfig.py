"""The exporter-toolkit web configuration file (--web.config.file), the same
format the official Prometheus exporters take: TLS, basic auth, headers, rate limit
(the toolkit's less common keys: exporter.http.toolkit_keys).

Parsed and checked completely at start; any problem is a ConfigError (exit 2).
The file holds credentials (and a plaintext password or a hash may be left in
the wrong place by mistake), so no refusal quotes a value, a key or a YAML tag
from it: fields are named by the format's own names, users and headers by
their position, a YAML error by its line, column and the format's keys that lead
there, and only file paths (which the operator needs to see) are shown.
"""

from __future__ import annotations

import re
import ssl
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exporter.errors import ConfigError
from exporter.http import toolkit_keys
from exporter.options import flag_of
from exporter.printable import has_control
from exporter.yamlfile import YamlError, parse_yaml, read_capped

SETTING = flag_of("web_config_file")

TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
# The versions this server speaks (the system's OpenSSL refuses TLS 1.0 and 1.1 at its
# security level): a maximum below them would fail every handshake.
SERVED_VERSIONS = ("TLS12", "TLS13")
# Python's ssl module verifies any certificate it requests, so the toolkit's
# "request but do not verify" modes have no faithful equivalent: refused.
CLIENT_AUTH_TYPES = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
TLS_KEYS = {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version", "max_version"}
# The toolkit's other TLS keys, read (or refused with the reason) by exporter.http.toolkit_keys.
TLS_KEYS |= {"cert", "key", "client_ca", "cipher_suites", "curve_preferences", "prefer_server_cipher_suites"}
TLS_KEYS |= {"client_allowed_sans"}
HTTP_KEYS = {"headers", "http2"}
TOP_KEYS = {"tls_server_config", "basic_auth_users", "http_server_config", "rate_limit"}
RATE_LIMIT_KEYS = {"interval", "burst"}
# bcrypt's work doubles with each step of its cost: 14 takes about a second on one
# core, 31 days. A check that cannot end within a scrape is refused at start.
MIN_BCRYPT_COST = 4
MAX_BCRYPT_COST = 14
_BCRYPT = re.compile(r"\$2[aby]\$([0-9]{2})\$[./A-Za-z0-9]{53}")
# The headers http_server_config.headers may set, and the values of those that are
# enumerations: the exporter-toolkit's own list. Every other header is the
# exporter's (Content-Type, Content-Encoding, WWW-Authenticate...) or the server's.
EXTRA_HEADERS: dict[str, tuple[str, ...]] = {
    "Strict-Transport-Security": (),
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": (),
    "Content-Security-Policy": (),
}
_EXTRA_BY_LOWER = {name.lower(): (name, values) for name, values in EXTRA_HEADERS.items()}
# The keys a YAML error may name on its way to where it is: the format's own; a user,
# which may be a password or a hash put in the wrong place, is named by its place.
FORMAT_NAMES = frozenset(TOP_KEYS | TLS_KEYS | HTTP_KEYS | RATE_LIMIT_KEYS | set(EXTRA_HEADERS))
# RFC 9110 field-value: visible ASCII, spaces and tabs inside; no CR, LF or NUL.
_FIELD_VALUE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?")


def bcrypt_cost(hashed: str) -> int | None:
    """The cost of a bcrypt hash ($2b$NN$ and 53 characters of salt and hash); None when not one."""
    match = _BCRYPT.fullmatch(hashed)
    return int(match.group(1)) if match is not None else None


class EncryptedKey(Exception):
    """The key file asks for a pass phrase; raised by the callback OpenSSL calls instead of prompting."""


def _no_pass_phrase() -> bytes:
    raise EncryptedKey


@dataclass(frozen=True)
class TlsConfig:
    cert_file: str
    key_file: str
    client_ca_file: str | None = None
    client_auth: ssl.VerifyMode = ssl.CERT_NONE
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    max_version: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED
    client_ca: str | None = field(default=None, repr=False)  # inline PEM
    ciphers: str | None = None  # OpenSSL's spelling of cipher_suites
    prefer_server_ciphers: bool = True
    curve: str | None = None
    allowed_sans: frozenset[str] | None = None

    def context(self) -> ssl.SSLContext:
        """The server's context; EncryptedKey (never a prompt on a terminal) when the key asks for a pass phrase."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = self.min_version
        context.maximum_version = self.max_version
        context.load_cert_chain(self.cert_file, self.key_file, password=_no_pass_phrase)
        context.verify_mode = self.client_auth
        if self.client_ca_file:
            context.load_verify_locations(self.client_ca_file)
        if self.client_ca:
            context.load_verify_locations(cadata=self.client_ca)
        if self.ciphers:
            context.set_ciphers(self.ciphers)
        if self.prefer_server_ciphers:
            context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
        else:
            context.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
        if self.curve:
            context.set_ecdh_curve(self.curve)
        return context


@dataclass(frozen=True)
class RateLimit:
    """rate_limit: a token every `interval` seconds, `burst` at most (exporter.http.ratelimit)."""

    interval: float
    burst: int


@dataclass(frozen=True)
class WebConfig:
    tls: TlsConfig | None = None
    basic_auth_users: Mapping[str, bytes] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    rate_limit: RateLimit | None = None
    # http_server_config.http2: true asked for HTTP/2, which is not served (logged at start).
    http2_asked: bool = False


def _problem(detail: str) -> ConfigError:
    return ConfigError(SETTING, detail)


def _mapping(value: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _problem(f"{where} must be a mapping")
    if not set(map(str, value)) <= allowed:
        # The field is not quoted: a mis-indented user or hash lands here.
        raise _problem(f"{where}: a field that is not one of {', '.join(sorted(allowed))}")
    return value


def _file(base: Path, raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        raise _problem(f"{where} must be a file path")
    path = (base / raw) if not Path(raw).is_absolute() else Path(raw)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise _problem(f"{where}: {path} does not exist") from None
    except OSError as exc:
        raise _problem(f"{where}: {path} cannot be read: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise _problem(f"{where}: {path} is a directory")
    if not stat.S_ISREG(mode):
        # A device (/dev/zero), a pipe or a socket: it may never end.
        raise _problem(f"{where}: {path} is not a regular file")
    return str(path)


def _tls(section: dict[str, Any], base: Path) -> TlsConfig | None:
    if not section:
        return None
    toolkit_keys.refuse_inline_server_pem(section)
    if "cert_file" not in section or "key_file" not in section:
        raise _problem("tls_server_config needs both cert_file and key_file")
    auth_name = section.get("client_auth_type", "NoClientCert")
    if not isinstance(auth_name, str) or auth_name not in CLIENT_AUTH_TYPES:
        raise _problem(f"client_auth_type is not one of {', '.join(CLIENT_AUTH_TYPES)}")
    client_auth = CLIENT_AUTH_TYPES[auth_name]
    ca_file = _file(base, section["client_ca_file"], "client_ca_file") if section.get("client_ca_file") else None
    client_ca = toolkit_keys.inline_client_ca(section.get("client_ca"))
    if ca_file is not None and client_ca is not None:
        raise _problem("client_ca_file and client_ca (inline) are exclusive: give one")
    if client_auth != ssl.CERT_NONE and ca_file is None and client_ca is None:
        raise _problem(f"client_auth_type {auth_name} needs client_ca_file (or client_ca inline)")
    sans = toolkit_keys.allowed_sans(section.get("client_allowed_sans"))
    if sans is not None and client_auth != ssl.CERT_REQUIRED:
        raise _problem("client_allowed_sans needs client_auth_type RequireAndVerifyClientCert (else no SAN to match)")
    min_version, max_version = _versions(section)
    tls = TlsConfig(
        cert_file=_file(base, section["cert_file"], "cert_file"),
        key_file=_file(base, section["key_file"], "key_file"),
        client_ca_file=ca_file,
        client_auth=client_auth,
        min_version=min_version,
        max_version=max_version,
        client_ca=client_ca,
        ciphers=toolkit_keys.cipher_string(section.get("cipher_suites")),
        prefer_server_ciphers=toolkit_keys.prefer_server(section.get("prefer_server_cipher_suites")),
        curve=toolkit_keys.curve(section.get("curve_preferences")),
        allowed_sans=sans,
    )
    try:
        tls.context()
    except EncryptedKey:
        raise _problem(
            f"key_file: {tls.key_file} is encrypted (it asks for a pass phrase): give the key unencrypted,"
            " readable by the exporter alone"
        ) from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        # OpenSSL's reason names no content: an inline PEM's text is never repeated.
        raise _problem(f"cannot load the TLS certificate, key, CA, cipher suites or curve: {exc}") from None
    return tls


def _versions(section: dict[str, Any]) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """min_version and max_version: known names, the maximum one this server speaks, not below the minimum."""
    names = {}
    for key, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        name = section.get(key, default)
        if not isinstance(name, str) or name not in TLS_VERSIONS:
            raise _problem(f"{key} is not one of {', '.join(TLS_VERSIONS)}")
        names[key] = name
    if names["max_version"] not in SERVED_VERSIONS:
        raise _problem(
            f"max_version {names['max_version']}: this server speaks {' and '.join(SERVED_VERSIONS)} only,"
            " so every handshake would fail"
        )
    if TLS_VERSIONS[names["min_version"]] > TLS_VERSIONS[names["max_version"]]:
        raise _problem(
            f"min_version {names['min_version']} is above max_version {names['max_version']}:"
            " no version is left for a handshake"
        )
    maximum = TLS_VERSIONS[names["max_version"]] if "max_version" in section else ssl.TLSVersion.MAXIMUM_SUPPORTED
    return TLS_VERSIONS[names["min_version"]], maximum


def _users(section: Any) -> dict[str, bytes]:
    """Users and their hashes, all of one cost: checking an unknown user's password
    costs that much too, so the time of an answer tells nothing of who exists."""
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise _problem("basic_auth_users must map user names to bcrypt hashes")
    users: dict[str, bytes] = {}
    costs: dict[int, str] = {}
    # Users are named by their place in the file, never quoted: a user and its hash
    # swapped, or a password written as a user, would be echoed.
    for number, (user, hashed) in enumerate(section.items(), start=1):
        where = f"user {number}"
        if not isinstance(user, str) or not user or ":" in user or has_control(user):
            raise _problem(f"basic_auth_users: {where} has an invalid name (a name without ':' or control characters)")
        cost = bcrypt_cost(hashed) if isinstance(hashed, str) else None
        if cost is None:
            raise _problem(f"basic_auth_users: the password of {where} is not a bcrypt hash")
        if not MIN_BCRYPT_COST <= cost <= MAX_BCRYPT_COST:
            raise _problem(
                f"basic_auth_users: the hash of {where} has cost {cost}; from {MIN_BCRYPT_COST} to"
                f" {MAX_BCRYPT_COST} are accepted (each step doubles the time of a check: {MAX_BCRYPT_COST}"
                " takes about a second)"
            )
        costs.setdefault(cost, where)
        if len(costs) > 1:
            (first, first_user), (other, other_user) = sorted(costs.items())[:2]
            raise _problem(
                f"basic_auth_users: {first_user} has cost {first} and {other_user} cost {other}:"
                " hash every password with one cost (a cheaper user would be found by the time of a wrong login)"
            )
        users[user] = hashed.encode("ascii")
    return users


def _headers(section: Any) -> dict[str, str]:
    if section is None:
        return {}
    if isinstance(section, dict):
        # A whole number (`X-XSS-Protection: 1`) is its text, as the toolkit's YAML decoder reads it into a string.
        section = {k: str(v) if isinstance(v, int) and not isinstance(v, bool) else v for k, v in section.items()}
    if not isinstance(section, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in section.items()):
        raise _problem("http_server_config.headers must map header names to strings")
    seen: set[str] = set()
    for number, (name, value) in enumerate(section.items(), start=1):
        known = _EXTRA_BY_LOWER.get(name.lower())
        if known is None:
            raise _problem(
                f"http_server_config.headers: header {number} cannot be configured"
                f" (these can: {', '.join(EXTRA_HEADERS)})"
            )
        canonical, allowed = known
        if canonical in seen:
            # Header names are case-insensitive: both spellings would be sent.
            raise _problem(f"http_server_config.headers: {canonical} is given twice (header names ignore case)")
        seen.add(canonical)
        if not _FIELD_VALUE.fullmatch(value):
            raise _problem(
                f"http_server_config.headers: the value of {canonical} is not a header value"
                " (visible ASCII, spaces inside; no line break or control character)"
            )
        if allowed and value.lower() not in allowed:
            raise _problem(f"http_server_config.headers: {canonical} must be one of {', '.join(allowed)}")
    return dict(section)


def _rate_limit(section: Any) -> RateLimit | None:
    if section is None:
        return None
    top = _mapping(section, "rate_limit", RATE_LIMIT_KEYS)
    interval = toolkit_keys.seconds(top.get("interval", 0), "rate_limit.interval")
    burst = top.get("burst", 0)
    if not isinstance(burst, int) or isinstance(burst, bool) or not 0 <= burst <= 1_000_000:
        raise _problem("rate_limit.burst is not a whole number from 0 to 1000000")
    if interval == 0:
        return None  # the toolkit's "0 disables"
    if burst == 0:
        raise _problem("rate_limit.burst 0 with an interval refuses every request: give a burst of 1 or more")
    return RateLimit(interval, burst)


def load_web_config(path: str) -> WebConfig:
    file = Path(path)
    try:
        text = read_capped(path)
        document = parse_yaml(text, secret=True, names=FORMAT_NAMES) if text.strip() else {}
    except OSError as exc:
        raise _problem(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise _problem(f"{path}: not UTF-8 text") from None
    except YamlError as exc:
        raise _problem(f"{path}: {exc}") from None
    top = _mapping(document, path, TOP_KEYS)
    base = file.resolve().parent
    http = _mapping(top.get("http_server_config"), "http_server_config", HTTP_KEYS)
    headers = _headers(http.get("headers"))
    return WebConfig(
        tls=_tls(_mapping(top.get("tls_server_config"), "tls_server_config", TLS_KEYS), base),
        basic_auth_users=_users(top.get("basic_auth_users")),
        headers=headers,
        rate_limit=_rate_limit(top.get("rate_limit")),
        http2_asked=toolkit_keys.http2(http.get("http2")),
    )
