"""The HTTP app: /metrics, a landing page and the health endpoints, behind
the proxy barrier and, when configured, basic auth."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from exporter.exporter import Exporter
from exporter.http.auth import BasicAuth
from exporter.http.endpoint import MetricsEndpoint
from exporter.http.middleware import ExtraHeaders, ProxyBarrier
from exporter.http.proxies import Network
from exporter.http.ratelimit import RateLimited
from exporter.http.reload import StaticWebConfig, WebConfigSource
from exporter.http.webconfig import WebConfig
from registry import VERSION

LANDING_PAGE = f"""<!doctype html>
<html><head><title>orpycamcp-exporter</title></head>
<body><h1>orpycamcp-exporter {VERSION}</h1>
<p><a href="/metrics">Metrics</a></p>
</body></html>
"""


def create_app(
    exporter: Exporter,
    web: WebConfig | WebConfigSource | None = None,
    tail: Callable[[], bytes] | None = None,
    trusted_proxies: tuple[Network, ...] = (),
) -> ASGIApp:
    """The app; `web` may be reloaded while serving, `tail` renders what follows each page;
    forwarded requests are answered only from `trusted_proxies`."""

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
    wrapped: ASGIApp = MetricsEndpoint(app, exporter, tail)
    source = web if not isinstance(web, WebConfig | None) else StaticWebConfig(web or WebConfig())
    # A configuration that cannot change and asks for neither costs nothing per request.
    fixed = source.current() if isinstance(source, StaticWebConfig) else None
    if fixed is None or fixed.headers:
        wrapped = ExtraHeaders(wrapped, source)
    if fixed is None or fixed.basic_auth_users:
        wrapped = BasicAuth(wrapped, source)
    # Before basic auth, as the toolkit: a request past the rate costs no bcrypt check.
    if fixed is None or fixed.rate_limit is not None:
        wrapped = RateLimited(wrapped, source)
    # Outermost: a proxied request is refused before anything else, auth included.
    return ProxyBarrier(wrapped, trusted_proxies)
