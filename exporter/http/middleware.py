"""ASGI middleware around the app: the proxy barrier and the configured extra headers."""

from __future__ import annotations

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from exporter.http.proxies import Network, RefusalLog, is_trusted, peer_address
from exporter.http.reload import WebConfigSource

PROXY_HEADERS = frozenset({b"x-forwarded-for", b"forwarded", b"x-real-ip"})


class ProxyBarrier:
    """404 for any request that came through a proxy, unless its peer is a trusted
    proxy (--web.trusted-proxies): the metrics are for the scraper on the private
    network only. Header names arrive lower-cased. A refusal is logged, once per
    peer in a while (exporter.http.proxies)."""

    def __init__(self, app: ASGIApp, trusted: tuple[Network, ...] = (), refusals: RefusalLog | None = None) -> None:
        self.app = app
        self.trusted = trusted
        self.refusals = refusals or RefusalLog()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            forwarded = next((name.lower() for name, _ in scope["headers"] if name.lower() in PROXY_HEADERS), None)
            if forwarded is not None:
                peer = peer_address(scope.get("client"))
                if not is_trusted(peer, self.trusted):
                    self.refusals.refused(peer, forwarded.decode("latin-1"))
                    await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class ExtraHeaders:
    """Adds the web configuration's http_server_config.headers to every response
    (the configuration's current ones: it may be reloaded)."""

    def __init__(self, app: ASGIApp, source: WebConfigSource) -> None:
        self.app = app
        self.source = source
        self._of: object = None
        self._headers: list[tuple[bytes, bytes]] = []

    def _current(self) -> list[tuple[bytes, bytes]]:
        headers = self.source.current().headers
        if headers is not self._of:
            self._headers = [
                (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()
            ]
            self._of = headers
        return self._headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        extra = self._current()
        if not extra or scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
