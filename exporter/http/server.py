"""Serving the app with uvicorn, its limits set deliberately."""

from __future__ import annotations

import logging
import signal
import ssl
from types import FrameType
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from exporter.http.app import create_app
from exporter.http.limits import BoundedHttpToolsProtocol
from exporter.http.webconfig import TlsConfig, WebConfig
from exporter.scrape import Exporter
from exporter.service import build_exporter
from exporter.settings import Settings


class TlsUvicornConfig(uvicorn.Config):
    """uvicorn's config with the SSL context built from the web configuration
    (minimum TLS version and client-certificate policy included)."""

    def __init__(self, app: ASGIApp, tls: TlsConfig, **kwargs: Any) -> None:
        self.tls = tls
        super().__init__(app, ssl_certfile=tls.cert_file, ssl_keyfile=tls.key_file, **kwargs)

    def load(self) -> None:
        super().load()
        self.ssl: ssl.SSLContext | None = self.tls.context()


log = logging.getLogger("orpycamcp.server")


def uvicorn_config(settings: Settings, exporter: Exporter, web: WebConfig) -> uvicorn.Config:
    options: dict[str, Any] = dict(
        host=settings.listen_host,
        port=settings.listen_port,
        loop="uvloop",
        # httptools with a time and size limit on request heads.
        http=BoundedHttpToolsProtocol,
        lifespan="on",
        log_config=None,  # our own logging setup stays in place
        access_log=False,
        server_header=False,
        # Proxy headers are refused outright, never trusted.
        proxy_headers=False,
        # Slow or idle clients do not hold connections open.
        timeout_keep_alive=15,
        timeout_graceful_shutdown=4,
        limit_concurrency=1000,
        backlog=512,
    )
    app = create_app(exporter, web)
    if web.tls is not None:
        return TlsUvicornConfig(app, tls=web.tls, **options)
    return uvicorn.Config(app, **options)


def serve(settings: Settings, web: WebConfig) -> int:
    exporter = build_exporter(settings)
    server = uvicorn.Server(uvicorn_config(settings, exporter, web))
    log.info(
        "serving signals %s on %s:%d (ttl %gs, deadline %gs)",
        ",".join(settings.signals),
        settings.listen_host,
        settings.listen_port,
        settings.ttl,
        settings.deadline,
    )
    # uvicorn handles SIGINT/SIGTERM itself (in-flight requests finish, then the
    # lifespan closes the pool) and re-raises the signal once done: make that
    # re-raise a no-op so a requested shutdown exits 0.
    previous = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if server.started else 1


def _ignore(signum: int, frame: FrameType | None) -> None:
    log.info("stopped by signal %d", signum)
