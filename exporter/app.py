"""The HTTP surface: /metrics, a landing page and the health endpoints."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from exporter.auth import BasicAuth
from exporter.render import CONTENT_TYPE
from exporter.scrape import Exporter
from exporter.webconfig import WebConfig
from registry import VERSION

SCRAPE_TIMEOUT_HEADER = "x-prometheus-scrape-timeout-seconds"
# Answer this much before Prometheus gives up on the scrape.
SCRAPE_TIMEOUT_MARGIN = 0.5
PROXY_HEADERS = frozenset({b"x-forwarded-for", b"forwarded", b"x-real-ip"})

LANDING_PAGE = f"""<!doctype html>
<html><head><title>orpycamcp-exporter</title></head>
<body><h1>orpycamcp-exporter {VERSION}</h1>
<p><a href="/metrics">Metrics</a></p>
</body></html>
"""


class ProxyBarrier:
    """404 for any request that came through a proxy: the metrics are for the
    scraper on the private network only. Header names arrive lower-cased."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and any(name.lower() in PROXY_HEADERS for name, _ in scope["headers"]):
            await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class ExtraHeaders:
    """Adds the web configuration's http_server_config.headers to every response."""

    def __init__(self, app: ASGIApp, headers: dict[str, str]) -> None:
        self.app = app
        self.headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *self.headers]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def scrape_wait(raw: bytes | None, deadline: float) -> float | None:
    """How long a scrape may wait, from Prometheus' scrape timeout header."""
    if raw is None:
        return None
    try:
        timeout = float(raw)
    except ValueError:
        return None
    if not timeout > 0:
        return None
    return min(max(timeout - SCRAPE_TIMEOUT_MARGIN, 0.05), deadline + 0.5)


def accepts_gzip(raw: bytes | None) -> bool:
    for coding in (raw or b"").decode("latin-1").split(","):
        name, _, params = coding.strip().partition(";")
        if name.strip().lower() == "gzip" and params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000"):
            return True
    return False


class MetricsEndpoint:
    """/metrics as a plain ASGI handler in front of the router: a cached page
    is sent without a routing, request or response object on the way."""

    PATH = "/metrics"
    COMMON_HEADERS = (
        (b"content-type", CONTENT_TYPE.encode("latin-1")),
        (b"vary", b"Accept-Encoding"),
        (b"cache-control", b"no-store"),
    )

    def __init__(self, app: ASGIApp, exporter: Exporter) -> None:
        self.app = app
        self.exporter = exporter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.PATH:
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            await PlainTextResponse("Method Not Allowed", 405, headers={"Allow": "GET, HEAD"})(scope, receive, send)
            return
        wanted = {SCRAPE_TIMEOUT_HEADER.encode(): None, b"accept-encoding": None}
        for name, value in scope["headers"]:
            lowered = name.lower()
            if lowered in wanted:
                wanted[lowered] = value
        body = self.exporter.cached_body() or await self.exporter.scrape(
            scrape_wait(wanted[SCRAPE_TIMEOUT_HEADER.encode()], self.exporter.deadline)
        )
        headers = list(self.COMMON_HEADERS)
        if accepts_gzip(wanted[b"accept-encoding"]):
            payload = body.gzipped
            headers.append((b"content-encoding", b"gzip"))
        else:
            payload = body.raw
        headers.append((b"content-length", str(len(payload)).encode("latin-1")))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload if method == "GET" else b""})


def create_app(exporter: Exporter, web: WebConfig | None = None) -> ASGIApp:
    async def landing(request: Request) -> Response:
        return HTMLResponse(LANDING_PAGE)

    async def healthy(request: Request) -> Response:
        return PlainTextResponse("Healthy\n")

    async def ready(request: Request) -> Response:
        return PlainTextResponse("Ready\n")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await exporter.close()

    app = Starlette(
        routes=[
            Route("/", landing, methods=["GET"]),
            Route("/-/healthy", healthy, methods=["GET"]),
            Route("/-/ready", ready, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    wrapped: ASGIApp = MetricsEndpoint(app, exporter)
    web = web or WebConfig()
    if web.headers:
        wrapped = ExtraHeaders(wrapped, dict(web.headers))
    if web.basic_auth_users:
        wrapped = BasicAuth(wrapped, web.basic_auth_users)
    # Outermost: a proxied request is refused before anything else, auth included.
    return ProxyBarrier(wrapped)
