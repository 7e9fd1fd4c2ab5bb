"""The listening socket: an empty host is every interface, IPv4 and IPv6; a host
that does not resolve is refused in the words check-config uses."""

from __future__ import annotations

import contextlib
import socket

import pytest

from exporter.errors import ListenError
from exporter.http.listen import ListenParser, bind, listening_on
from exporter.options import Refused


def _connects(family: socket.AddressFamily, host: str, port: int) -> bool:
    with socket.socket(family, socket.SOCK_STREAM) as client:
        client.settimeout(5)
        return client.connect_ex((host, port)) == 0


def test_an_empty_host_accepts_ipv4_and_ipv6() -> None:
    # Port 0: a free port; the socket is closed as soon as both loopbacks have connected.
    with contextlib.closing(bind("", 0)) as listener:
        listener.listen(4)
        port = listener.getsockname()[1]
        assert listener.family == socket.AF_INET6
        assert listener.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 0
        assert _connects(socket.AF_INET, "127.0.0.1", port)
        assert _connects(socket.AF_INET6, "::1", port)
        assert listening_on(listener) == f":{port} (every interface, IPv4 and IPv6)"


def test_a_named_address_listens_there_only() -> None:
    with contextlib.closing(bind("127.0.0.1", 0)) as listener:
        assert listener.family == socket.AF_INET
        assert listening_on(listener) == f"127.0.0.1:{listener.getsockname()[1]}"


def test_an_unresolvable_host_is_refused_naming_it() -> None:
    with pytest.raises(
        ListenError, match=r"cannot listen on exporter\.invalid:0: cannot resolve the host 'exporter\.invalid'"
    ):
        bind("exporter.invalid", 0)


# What the resolver itself raises UnicodeError on (IDNA): an empty label, a label
# of 64 characters, a character IDNA refuses.
NOT_HOST_NAMES = ["a..b", ".a", "a" * 64, "x." + "a" * 64 + ".com", "\u200b", "\ud800", "a\x00b", "a" * 254]


@pytest.mark.parametrize("host", NOT_HOST_NAMES)
def test_a_host_the_resolver_cannot_encode_is_refused_before_it_resolves(host: str) -> None:
    with pytest.raises(Refused, match=r"not a host name|NUL character"):
        ListenParser()(f"{host}:9999", {})
    with pytest.raises(ListenError, match=r"not a host name|NUL character"):
        bind(host, 0)
