"""The listening socket, bound before anything else starts, so an address
already in use is one clear line and exit 2 (and the demo finds out before
it starts its servers).

An empty host listens on every interface, IPv4 and IPv6: one IPv6 socket that
also accepts IPv4 (IPV6_V6ONLY off), or IPv4 alone where the host has no IPv6.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from exporter.errors import ListenError
from exporter.hostnames import host_problem
from exporter.options import Refused

EVERY_INTERFACE = ""


def show_address(host: str, port: int) -> str:
    """HOST:PORT as an operator writes it: an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def resolve(host: str, port: int) -> tuple[Any, ...]:
    """What binding `host` means: getaddrinfo's first answer, or Refused naming the host.
    `check-config`, `serve` and `healthcheck` all go through here, so they refuse the same hosts."""
    if host == EVERY_INTERFACE:
        return (socket.AF_INET6, socket.SOCK_STREAM, 0, "", ("::", port))
    problem = host_problem(host)  # checked first: the resolver raises UnicodeError on these
    if problem is not None:
        raise Refused(f"the host {host!r}: {problem}")
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise Refused(f"cannot resolve the host {host!r}: {exc.strerror}") from None


def _every_interface() -> socket.socket:
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    except OSError:  # no IPv6 on this host
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    return sock


def bind(host: str, port: int) -> socket.socket:
    address = show_address(host, port)
    try:
        family, kind, proto, _, where = resolve(host, port)
    except Refused as exc:
        raise ListenError(address, exc.problem) from None
    if host == EVERY_INTERFACE:
        sock = _every_interface()
        where = ("::", port) if sock.family == socket.AF_INET6 else ("0.0.0.0", port)
    else:
        sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(where)
    except OSError as exc:
        sock.close()
        problem = "the address is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise ListenError(address, problem) from None
    sock.set_inheritable(True)
    return sock


def listening_on(sock: socket.socket) -> str:
    """Where a bound socket listens, as the start-up line says it."""
    host, port = sock.getsockname()[:2]
    if sock.family == socket.AF_INET6 and host == "::" and not sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY):
        return f":{port} (every interface, IPv4 and IPv6)"
    if host in ("0.0.0.0", "::"):
        return f"{show_address(host, port)} (every {'IPv4' if host == '0.0.0.0' else 'IPv6'} interface)"
    return show_address(host, port)


class ListenAddress(NamedTuple):
    host: str  # "" listens on every interface, IPv4 and IPv6
    port: int


@dataclass(frozen=True)
class ListenParser:
    kind: str = "HOST:PORT, one address"

    def __call__(self, raw: str, env: Mapping[str, str]) -> ListenAddress:
        if "," in raw or any(char.isspace() for char in raw):
            raise Refused(f"{raw!r}: give one HOST:PORT")
        host, sep, port = raw.rpartition(":")
        if not sep:
            raise Refused(f"{raw!r} is not HOST:PORT")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            number = int(port)
        except ValueError:
            raise Refused(f"port {port!r} is not a number") from None
        if not 0 <= number <= 65535:
            raise Refused(f"port {number} is out of range")
        resolve(host, number)  # what serve binds, resolved the same way
        return ListenAddress(host, number)
