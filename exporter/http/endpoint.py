"""/metrics: a plain ASGI handler in front of the router."""

from __future__ import annotations

import math
from collections.abc import Callable

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from exporter.exporter import Exporter
from exporter.exposition.text import CONTENT_TYPE
from exporter.timeouts import header_wait

SCRAPE_TIMEOUT_HEADER = b"x-prometheus-scrape-timeout-seconds"


def scrape_timeout(raw: bytes | None) -> float | None:
    """Prometheus' scrape timeout from its header; None when absent or not a positive number."""
    if raw is None:
        return None
    try:
        timeout = float(raw)
    except ValueError:
        return None
    return timeout if math.isfinite(timeout) and timeout > 0 else None


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

    def __init__(self, app: ASGIApp, exporter: Exporter, tail: Callable[[], bytes] | None = None) -> None:
        self.app = app
        self.exporter = exporter
        # The HTTP server's own families, which change with every connection: rendered
        # per response and appended to the cached page, which they never invalidate.
        self.tail = tail

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.PATH:
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            await PlainTextResponse("Method Not Allowed", 405, headers={"Allow": "GET, HEAD"})(scope, receive, send)
            return
        wanted = {SCRAPE_TIMEOUT_HEADER: None, b"accept-encoding": None}
        for name, value in scope["headers"]:
            lowered = name.lower()
            if lowered in wanted:
                wanted[lowered] = value
        body = self.exporter.cached_page() or await self.exporter.scrape(
            header_wait(scrape_timeout(wanted[SCRAPE_TIMEOUT_HEADER]))
        )
        headers = list(self.COMMON_HEADERS)
        tail = self.tail() if self.tail is not None else b""
        if accepts_gzip(wanted[b"accept-encoding"]):
            payload = body.gzipped(tail)
            headers.append((b"content-encoding", b"gzip"))
        else:
            payload = body.body(tail)
        headers.append((b"content-length", str(len(payload)).encode("latin-1")))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload if method == "GET" else b""})
