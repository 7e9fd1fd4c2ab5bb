"""The reference HTTP apps for the cached-scrape benchmark, served by uvicorn
with exactly the exporter's settings (exporter.http.server.uvicorn_config):

- constant: the same page bytes (and their gzip form, made once) from a bare
  ASGI app: the HTTP floor, what uvicorn itself costs per request;
- prometheus_client: prometheus_client's make_asgi_app over a registry holding
  the same families and series, rendered (and gzipped) on every request, as a
  prometheus_client exporter does.

    python -m bench.http_apps constant|prometheus_client PORT PAGE_FILE
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from prometheus_client import CollectorRegistry, make_asgi_app
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import ASGIApp, Receive, Scope, Send

from exporter.exposition.text import CONTENT_TYPE
from exporter.http.server import uvicorn_config
from exporter.http.webconfig import WebConfig
from exporter.loading import load
from exporter.service import build_exporter


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _accepts_gzip(scope: Scope) -> bool:
    return any(name == b"accept-encoding" and b"gzip" in value for name, value in scope["headers"])


def constant_app(page: bytes) -> ASGIApp:
    gzipped = gzip.compress(page, compresslevel=6, mtime=0)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        headers = [(b"content-type", CONTENT_TYPE.encode())]
        body = page
        if _accepts_gzip(scope):
            headers.append((b"content-encoding", b"gzip"))
            body = gzipped
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


class PageCollector:
    """Yields the families of a fixed page on every collect, as a custom collector would."""

    def __init__(self, page: bytes) -> None:
        self.families = list(text_string_to_metric_families(page.decode("utf-8")))

    def collect(self) -> Iterator[Any]:
        yield from self.families


def prometheus_client_app(page: bytes) -> ASGIApp:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PageCollector(page))
    inner: ASGIApp = make_asgi_app(registry)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        await inner(scope, receive, send)

    return app


def main() -> None:
    kind, port, page_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    page = Path(page_file).read_bytes()
    app = constant_app(page) if kind == "constant" else prometheus_client_app(page)
    # The exporter's own uvicorn settings; the exporter object is never used.
    settings = load(
        {"database_url": "postgresql://unused@127.0.0.1:1/unused", "web_listen_address": f"127.0.0.1:{port}"}, {}
    )
    config = uvicorn_config(settings, build_exporter(settings), WebConfig())
    config.app = app
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
