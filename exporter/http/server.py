"""Serving the app with uvicorn, its limits set deliberately: connections
counted and capped from the file-descriptor budget, request heads timed, the
web configuration reloaded, and every signal that stops the process logged."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import ssl
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from exporter.exporter import Exporter
from exporter.heap import freeze_startup
from exporter.http.app import create_app
from exporter.http.connections import ConnectionBook
from exporter.http.fdlimit import connection_cap, raise_fd_limit
from exporter.http.limits import bounded_protocol
from exporter.http.listen import bind, listening_on
from exporter.http.reload import ReloadingWebConfig, StaticWebConfig, WebConfigSource
from exporter.http.webconfig import TlsConfig, WebConfig
from exporter.process import ProcessTail
from exporter.service import build_exporter
from exporter.settings import Settings

log = logging.getLogger("orpycamcp.server")

# Signals whose default action would end the process without a word: logged and ignored.
IGNORED_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2)


class TlsUvicornConfig(uvicorn.Config):
    """uvicorn's config with the SSL context built from the web configuration
    (minimum TLS version and client-certificate policy included), or handed
    over by the reloading web configuration."""

    def __init__(self, app: ASGIApp, tls: TlsConfig, context: Callable[[], ssl.SSLContext], **kwargs: Any) -> None:
        self.tls = tls
        self.make_context = context
        super().__init__(app, ssl_certfile=tls.cert_file, ssl_keyfile=tls.key_file, **kwargs)

    def load(self) -> None:
        # uvicorn would load the key itself first, with no pass-phrase callback: an
        # encrypted key (swapped in since the web config was checked) would prompt on
        # the terminal. Hidden from it while it loads; the context is ours.
        files = self.ssl_certfile, self.ssl_keyfile
        self.ssl_certfile = self.ssl_keyfile = None
        try:
            super().load()
        finally:
            self.ssl_certfile, self.ssl_keyfile = files
        self.ssl: ssl.SSLContext | None = self.make_context()


def uvicorn_config(
    settings: Settings,
    exporter: Exporter,
    web: WebConfig | WebConfigSource,
    book: ConnectionBook | None = None,
) -> uvicorn.Config:
    source = web if not isinstance(web, WebConfig) else StaticWebConfig(web)

    def allowed_sans() -> frozenset[str] | None:
        tls = source.current().tls
        return tls.allowed_sans if tls is not None else None

    protocol = bounded_protocol(book, settings.web_request_head_timeout, allowed_sans)
    options: dict[str, Any] = dict(
        host=settings.web_listen_address.host,
        port=settings.web_listen_address.port,
        loop="uvloop",
        # httptools with a time and size limit on request heads, and the connection book.
        http=protocol,
        # No WebSocket is served: an upgrade request is refused with 400 (exporter/http/limits.py).
        ws="none",
        lifespan="on",
        log_config=None,  # our own logging setup stays in place
        access_log=False,
        server_header=False,
        # Proxy headers never rewrite the client address; a forwarded request is refused
        # unless its peer is a trusted proxy (ProxyBarrier).
        proxy_headers=False,
        # Idle keep-alive connections are closed after this; heads must arrive within request_head_timeout.
        timeout_keep_alive=15,
        timeout_graceful_shutdown=4,
        # No request-level limit (uvicorn's answers 503 to a scraper once enough idle
        # sockets are open); the connection book caps connections, shedding idle ones.
        limit_concurrency=None,
        backlog=4096,
    )
    process = ProcessTail()
    connections = book.tail if book is not None else bytes

    def tail() -> bytes:
        # Registry order: the connection families, then the process families.
        return connections() + process.tail()

    app = create_app(exporter, source, tail, settings.web_trusted_proxies or ())
    current = source.current()
    if current.tls is None:
        return uvicorn.Config(app, **options)
    tls = current.tls
    make_context = source.server_context if isinstance(source, ReloadingWebConfig) else tls.context
    return TlsUvicornConfig(app, tls=tls, context=make_context, **options)


def serve(settings: Settings, listener: socket.socket | None = None) -> int:
    """Serve until a signal stops it; raises ListenError when the address cannot be bound."""
    web = settings.web
    listener = listener or bind(*settings.web_listen_address)
    budget = raise_fd_limit()
    book = ConnectionBook(connection_cap(budget, settings.database_max_connections, settings.web_max_connections))
    source: WebConfigSource = (
        ReloadingWebConfig(settings.web_config_file, web) if settings.web_config_file else StaticWebConfig(web)
    )
    exporter = build_exporter(settings)
    freeze_startup()  # the registry and settings: out of the garbage collector's walks (exporter/heap.py)
    server = uvicorn.Server(uvicorn_config(settings, exporter, source, book))
    log.info(
        "serving %s (ttl %gs, deadline %gs, at most %d connections, request heads within %gs)",
        settings.summary(listening_on(listener)),
        settings.ttl,
        settings.deadline,
        book.cap,
        settings.web_request_head_timeout,
    )
    if web.http2_asked:
        log.info(
            "http_server_config.http2: true is not honoured: this exporter serves HTTP/1.1 only (uvicorn);"
            " clients negotiate HTTP/1.1, as Prometheus scrapes"
        )
    if settings.redis_tls.insecure_skip_verify:
        log.warning(
            "TLS to Redis accepts any certificate and host name (--redis.tls-insecure-skip-verify):"
            " a server impersonating Redis would be read as Redis"
        )
    # uvicorn handles SIGINT/SIGTERM itself (in-flight requests finish, then the
    # lifespan closes the pool) and re-raises the signal once done: make that
    # re-raise a no-op so a requested shutdown exits 0.
    handlers: dict[int, Callable[[int, FrameType | None], Any]] = {
        signal.SIGINT: _stopper(server),
        signal.SIGTERM: _stopper(server),
        signal.SIGHUP: _reloader(source),
        **{sig: _ignored for sig in IGNORED_SIGNALS},
    }
    previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    try:
        server.run(sockets=[listener])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        listener.close()
    return 0 if server.started else 1


def _name(signum: int) -> str:
    return signal.Signals(signum).name


def _stopper(server: uvicorn.Server) -> Callable[[int, FrameType | None], None]:
    """The handler in force outside uvicorn's own: a stop asked before uvicorn took
    the signals (while it starts) is kept, and uvicorn exits once started."""

    def stopped(signum: int, frame: FrameType | None) -> None:
        server.should_exit = True
        log.info("stopped by signal %s", _name(signum))

    return stopped


def _ignored(signum: int, frame: FrameType | None) -> None:
    log.warning("signal %s ignored (SIGTERM or SIGINT stop the exporter, SIGHUP reloads the web config)", _name(signum))


def _reloader(source: WebConfigSource) -> Callable[[int, FrameType | None], None]:
    def reload() -> None:
        if isinstance(source, ReloadingWebConfig):
            if not source.check(why="SIGHUP"):
                log.info("SIGHUP: web config %s kept as it was", source.path)
        else:
            log.info("SIGHUP: there is no --web.config.file to reload")

    def on_hangup(signum: int, frame: FrameType | None) -> None:
        # Run by the event loop, not inside whatever the signal interrupted.
        try:
            asyncio.get_running_loop().call_soon_threadsafe(reload)
        except RuntimeError:  # not serving yet, or any more
            reload()

    return on_hangup
