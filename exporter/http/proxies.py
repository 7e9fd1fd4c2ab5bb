"""The peers whose forwarded requests are answered (--web.trusted-proxies), and
the log of those refused.

By default any request that carries a forwarding header (X-Forwarded-For,
Forwarded, X-Real-IP) came through a proxy and is answered 404 (ADR-041: the
metrics are for the scraper on the private network). A sidecar that guards
them (kube-rbac-proxy, an oauth2 proxy) forwards from loopback with such a
header: naming its address here lets its requests through, answered as if
direct. Nothing else changes: the exporter does not use the client address,
so the forwarded one is not read.

A refused forwarded request is logged, at most once per peer in LOG_INTERVAL
seconds, with the flag that would let it through.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

from exporter.options import Refused, flag_of
from exporter.yamlfile import excerpt

log = logging.getLogger("orpycamcp.http")

Network = IPv4Network | IPv6Network
Address = IPv4Address | IPv6Address
# One warning per peer in this many seconds; at most this many peers remembered.
LOG_INTERVAL = 600.0
REMEMBERED_PEERS = 1024
SETTING = flag_of("web_trusted_proxies")


@dataclass(frozen=True)
class TrustedProxies:
    """The option's parser: comma-separated addresses and CIDR networks (`127.0.0.1/32,::1`)."""

    kind: str = "comma-separated IP addresses or CIDR networks"

    def __call__(self, raw: str, env: Mapping[str, str]) -> tuple[Network, ...]:
        networks: list[Network] = []
        for part in (piece.strip() for piece in raw.split(",")):
            if not part:
                continue
            try:
                # strict: 10.0.0.1/8 is refused, it names an address where a network was meant.
                networks.append(ipaddress.ip_network(part, strict=True))
            except ValueError:
                # ipaddress's own message repeats the whole text: an excerpt instead.
                raise Refused(
                    f"{excerpt(part)} is not an IP address (127.0.0.1, ::1) or a CIDR network with no host bits set"
                    " (10.0.0.0/8)"
                ) from None
        if not networks:
            raise Refused("names no address: give the proxy's address, e.g. 127.0.0.1/32")
        return tuple(networks)


def peer_address(client: tuple[str, int] | list[object] | None) -> Address | None:
    """The peer of a connection (an IPv4-mapped IPv6 address as IPv4); None for a Unix socket."""
    if not client:
        return None
    try:
        address = ipaddress.ip_address(str(client[0]))
    except ValueError:
        return None
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_trusted(peer: Address | None, networks: tuple[Network, ...]) -> bool:
    return peer is not None and any(peer.version == net.version and peer in net for net in networks)


class RefusalLog:
    """A warning for a refused forwarded request, at most once per peer every `interval` seconds."""

    def __init__(
        self,
        interval: float = LOG_INTERVAL,
        remembered: int = REMEMBERED_PEERS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.remembered = remembered
        self.clock = clock
        self._last: OrderedDict[str, float] = OrderedDict()

    def refused(self, peer: Address | None, header: str) -> bool:
        """Log the refusal of a request from `peer` carrying `header`, unless logged lately; True if logged."""
        key = str(peer) if peer is not None else "a Unix socket"
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            return False
        self._last[key] = now
        self._last.move_to_end(key)
        while len(self._last) > self.remembered:
            self._last.popitem(last=False)
        network = f"{peer}/{peer.max_prefixlen}" if peer is not None else "ADDRESS/PREFIX"
        log.warning(
            "a request from %s carried %s and was answered 404: forwarded requests are refused unless their peer"
            " is trusted; if %s is your reverse proxy, set %s %s (logged once per peer every %g s)",
            key,
            header,
            key,
            SETTING,
            network,
            self.interval,
        )
        return True
