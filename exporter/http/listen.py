"""The listening socket, bound before anything else starts, so an address
already in use is one clear line and exit 2 (and the demo finds out before
it starts its servers)."""

from __future__ import annotations

import errno
import socket

from exporter.errors import ListenError


def show_address(host: str, port: int) -> str:
    """HOST:PORT as an operator writes it: an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind(host: str, port: int) -> socket.socket:
    address = show_address(host, port)
    try:
        family, kind, proto, _, where = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ListenError(address, f"cannot resolve the host: {exc.strerror}") from None
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
