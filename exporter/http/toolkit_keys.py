"""The exporter-toolkit web configuration keys beyond files, users and headers,
each read with the toolkit's meaning in Python's ssl module, or refused with the
reason and what to use instead (docs/security.md, "The web configuration"):

- `cipher_suites`: Go's names of the TLS 1.2 suites crypto/tls.CipherSuites()
  lists, in OpenSSL's spelling; TLS 1.3's are accepted and change nothing, as in
  Go (neither lets them be chosen); Go's insecure suites are refused, as the
  toolkit refuses them.
- `prefer_server_cipher_suites` (default true): OP_CIPHER_SERVER_PREFERENCE.
- `curve_preferences`: one curve. Python's ssl sets one ECDH group
  (SSLContext.set_ecdh_curve), not a preference list: two or more are refused.
- `client_allowed_sans`: checked on every connection once its handshake is
  done (exporter.http.limits): a client certificate with none of them is
  disconnected before a request is read.
- `client_ca` (inline PEM): loaded as the client CA. `cert` and `key` inline:
  refused, Python's ssl loads a server certificate and key only from files.
- `rate_limit`: exporter.http.ratelimit.
- `http_server_config.http2`: uvicorn serves HTTP/1.1 only. `true` (the
  toolkit's default) is accepted and logged once: clients negotiate HTTP/1.1
  by ALPN, as Prometheus scrapes anyway.
"""

from __future__ import annotations

import re
from typing import Any

from exporter.errors import ConfigError
from exporter.options import flag_of

SETTING = flag_of("web_config_file")

# crypto/tls.CipherSuites() up to TLS 1.2, Go name -> OpenSSL name.
CIPHER_SUITES = {
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    # Go's older spellings of the two above.
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
# TLS 1.3's: listed by Go, chosen by neither Go nor Python.
TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"})
# crypto/tls.CurveID names -> OpenSSL group names.
CURVES = {"CurveP256": "prime256v1", "CurveP384": "secp384r1", "CurveP521": "secp521r1", "X25519": "X25519"}
# Go's time.ParseDuration units, in seconds.
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def _problem(detail: str) -> ConfigError:
    return ConfigError(SETTING, detail)


def _names(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _problem(f"{where} must be a list of names")
    return list(value)


def cipher_string(value: Any) -> str | None:
    """The OpenSSL cipher list of `cipher_suites` (None: OpenSSL's defaults), in the given order."""
    names = _names(value, "tls_server_config.cipher_suites")
    chosen: list[str] = []
    for name in names:
        if name in TLS13_SUITES:
            continue
        if name not in CIPHER_SUITES:
            raise _problem(
                f"tls_server_config.cipher_suites: entry {names.index(name) + 1} is not one of Go's secure TLS 1.2"
                " cipher suites"
                f" ({', '.join(sorted(CIPHER_SUITES))}; TLS 1.3's are accepted and not configurable)"
            )
        chosen.append(CIPHER_SUITES[name])
    return ":".join(chosen) if chosen else None


def curve(value: Any) -> str | None:
    """The one ECDH group of `curve_preferences` (None: OpenSSL's defaults)."""
    names = _names(value, "tls_server_config.curve_preferences")
    for name in names:
        if name not in CURVES:
            raise _problem(
                f"tls_server_config.curve_preferences: entry {names.index(name) + 1} is not one of {', '.join(CURVES)}"
                " (post-quantum hybrids such as X25519MLKEM768 are not in this OpenSSL)"
            )
    if len(names) > 1:
        raise _problem(
            "tls_server_config.curve_preferences: Python's ssl module sets one ECDH curve"
            " (SSLContext.set_ecdh_curve), not a preference list: name one curve, or leave the key out for"
            " OpenSSL's defaults (X25519, P-256, P-384, P-521, in that order)"
        )
    return CURVES[names[0]] if names else None


def prefer_server(value: Any) -> bool:
    if value is None:
        return True  # the toolkit's default
    if not isinstance(value, bool):
        raise _problem("tls_server_config.prefer_server_cipher_suites must be true or false")
    return value


def allowed_sans(value: Any) -> frozenset[str] | None:
    """The SANs a client certificate must carry one of (None: any certificate the CA signed)."""
    names = _names(value, "tls_server_config.client_allowed_sans")
    if any(not name for name in names):
        raise _problem("tls_server_config.client_allowed_sans: an entry is empty")
    return frozenset(names) if names else None


def refuse_inline_server_pem(section: dict[str, Any]) -> None:
    """`cert` and `key` inline: refused (their content is never repeated)."""
    for key, file_key in (("cert", "cert_file"), ("key", "key_file")):
        if key in section:
            raise _problem(
                f"tls_server_config.{key} (inline PEM) cannot be honoured: Python's ssl module loads a server"
                f" certificate and key only from files (SSLContext.load_cert_chain); use {file_key}"
                " (a mounted Secret: it is reloaded when it changes)"
            )


def inline_client_ca(value: Any) -> str | None:
    """`client_ca` (inline PEM): the CA certificates' text, checked when the context is built."""
    if value is None:
        return None
    if not isinstance(value, str) or "-----BEGIN CERTIFICATE-----" not in value:
        raise _problem("tls_server_config.client_ca must be PEM text (-----BEGIN CERTIFICATE-----...)")
    return value


def http2(value: Any) -> bool:
    """`http_server_config.http2`: whether it asked for HTTP/2, which is not served."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _problem("http_server_config.http2 must be true or false")
    return value


def seconds(value: Any, where: str) -> float:
    """A Go duration (`1s`, `250ms`, `1m30s`, `0`) in seconds."""
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return 0.0
    text = value if isinstance(value, str) else None
    if text == "0":
        return 0.0
    if text is None or not text or not _DURATION.sub("", text) == "" or len(text) > 64:
        raise _problem(f"{where} is not a duration (1s, 250ms, 1m30s; 0 disables)")
    return sum(float(number) * _UNITS[unit] for number, unit in _DURATION.findall(text))
