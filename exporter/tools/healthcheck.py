"""`orpycamcp-exporter healthcheck`: is the exporter of this container answering?

Probes `/-/healthy` where the exporter really listens, with its scheme. The
settings are the serving process's own: its command line (read from
/proc/1/cmdline when that process is the exporter, which it is in the image),
then the environment, then the defaults, exactly as `serve` reads them; flags
given to `healthcheck` itself win. Only the options the probe needs are read
(the listen address and the web configuration): a database URL is not needed.
Exit 0 when healthy, 1 when not or when the settings are invalid (Docker
reserves exit 2).
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exporter.arguments import build_parser, option_values, with_command
from exporter.errors import ConfigError, InvalidSettings
from exporter.http.listen import ListenAddress
from exporter.http.webconfig import WebConfig, load_web_config
from exporter.loading import load_some
from exporter.options import OptionName

PATH = "/-/healthy"
# The options the probe reads.
PROBED: tuple[OptionName, ...] = ("web_listen_address", "web_config_file")
# Below Docker's default health check timeout (30 s) and the image's (5 s).
TIMEOUT_SECONDS = 3.0
MAIN_PROCESS = Path("/proc/1/cmdline")
CONSOLE_SCRIPT = "orpycamcp-exporter"
# What a server that requires a client certificate answers a client without one:
# it is up and answering, which is all a liveness probe asks.
CLIENT_CERTIFICATE_REFUSALS = frozenset({"TLSV13_ALERT_CERTIFICATE_REQUIRED", "SSLV3_ALERT_HANDSHAKE_FAILURE"})


@dataclass(frozen=True)
class Probe:
    host: str
    port: int
    tls: bool
    # With basic auth on, every path answers 401 without credentials, and the web
    # configuration only holds bcrypt hashes: the exporter's own 401 proves it answers.
    basic_auth: bool
    client_certificate_required: bool
    # Offered as the client certificate when one is required: in a private PKI
    # the client CA often signed the server's own certificate too.
    client_certificate: tuple[str, str] | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{PATH}"


@dataclass(frozen=True)
class Verdict:
    healthy: bool
    detail: str


def serve_arguments(cmdline: bytes) -> list[str] | None:
    """The exporter's arguments in a NUL-separated command line, None if it is not the exporter."""
    argv = [part.decode(errors="replace") for part in cmdline.split(b"\0") if part]
    for index, part in enumerate(argv):
        if os.path.basename(part) == CONSOLE_SCRIPT:
            return argv[index + 1 :]
        if part == "-m" and argv[index + 1 : index + 2] == ["exporter"]:
            return argv[index + 2 :]
    return None


def main_process_values(cmdline_file: Path = MAIN_PROCESS) -> dict[str, Any]:
    """The option values on the serving process's command line ({} if it is not the exporter)."""
    try:
        arguments = serve_arguments(cmdline_file.read_bytes())
    except OSError:
        return {}
    if arguments is None:
        return {}
    arguments = with_command(arguments)
    if arguments[0] != "serve":
        return {}
    parsed, _unknown = build_parser().parse_known_args(arguments)
    return option_values(parsed)


def probe_host(listen_host: str) -> str:
    """Where to reach a server listening on `listen_host` from inside its own container."""
    if listen_host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if listen_host == "::":
        return "::1"
    try:
        ipaddress.ip_address(listen_host)
    except ValueError:
        return listen_host  # a name: the server bound what it resolves to
    return listen_host


def plan(values: Mapping[str, Any], env: Mapping[str, str], cmdline_file: Path = MAIN_PROCESS) -> Probe:
    """The probe for the serving process's settings; ConfigError if they are invalid."""
    given = {name: value for name, value in values.items() if value is not None}
    settings = load_some(main_process_values(cmdline_file) | given, env, PROBED)
    listen: ListenAddress = settings["web_listen_address"]
    web = load_web_config(settings["web_config_file"]) if settings["web_config_file"] else WebConfig()
    return Probe(
        host=probe_host(listen.host),
        port=listen.port,
        tls=web.tls is not None,
        basic_auth=bool(web.basic_auth_users),
        client_certificate_required=web.tls is not None and web.tls.client_auth == ssl.CERT_REQUIRED,
        client_certificate=(web.tls.cert_file, web.tls.key_file) if web.tls is not None else None,
    )


def check(probe: Probe, timeout: float = TIMEOUT_SECONDS) -> Verdict:
    connection: http.client.HTTPConnection
    if probe.tls:
        # A liveness probe of the local process: the certificate names the
        # service, not the loopback address, so it is not verified here.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if probe.client_certificate_required and probe.client_certificate is not None:
            context.load_cert_chain(*probe.client_certificate)
        connection = http.client.HTTPSConnection(probe.host, probe.port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(probe.host, probe.port, timeout=timeout)
    try:
        # Straight to the server: a proxy from the environment is never used.
        connection.request("GET", PATH, headers={"User-Agent": "orpycamcp-exporter-healthcheck"})
        response = connection.getresponse()
        response.read()
    except ssl.SSLError as exc:
        if probe.client_certificate_required and exc.reason in CLIENT_CERTIFICATE_REFUSALS:
            return Verdict(True, f"{probe.url}: answered, client certificate required")
        return Verdict(False, f"{probe.url}: TLS error {exc.reason or exc}")
    except (ConnectionResetError, http.client.RemoteDisconnected) as exc:
        # After the TLS handshake, a server requiring a client certificate it
        # does not accept drops the connection: it is up and answering.
        if probe.client_certificate_required:
            return Verdict(True, f"{probe.url}: answered, client certificate required")
        return Verdict(False, f"{probe.url}: {type(exc).__name__}: {exc or 'no answer'}")
    except (OSError, http.client.HTTPException) as exc:
        return Verdict(False, f"{probe.url}: {type(exc).__name__}: {exc or 'no answer'}")
    finally:
        connection.close()
    if response.status == 200:
        return Verdict(True, f"{probe.url}: 200")
    challenge = response.getheader("WWW-Authenticate", "")
    if probe.basic_auth and response.status == 401 and challenge.startswith("Basic "):
        return Verdict(True, f"{probe.url}: answered 401, basic auth required")
    return Verdict(False, f"{probe.url}: HTTP {response.status}")


def healthcheck(values: Mapping[str, Any], env: Mapping[str, str]) -> int:
    try:
        probe = plan(values, env)
    except ConfigError as exc:
        for error in exc.errors if isinstance(exc, InvalidSettings) else (exc,):
            print(f"{CONSOLE_SCRIPT} healthcheck: {error}", file=sys.stderr)
        return 1
    verdict = check(probe)
    print(("healthy: " if verdict.healthy else "unhealthy: ") + verdict.detail)
    return 0 if verdict.healthy else 1
