"""The web configuration kept current while serving, as the exporter-toolkit
does: the file and the files it names (certificate, key, client CA) are read
again when they change, checked at every TLS handshake and at most once a
second by the HTTP middleware, and on SIGHUP.

A changed certificate is served to the next handshake by swapping the
connection's SSLContext in the SNI callback (called for every ClientHello,
SNI or not); connections already established keep theirs, so nothing in
flight is dropped. A configuration that does not load is logged once and the
last valid one stays in force: never a crash, never an open door.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Callable
from typing import Protocol

from exporter.errors import ConfigError
from exporter.http.webconfig import SETTING, EncryptedKey, TlsConfig, WebConfig, load_web_config

log = logging.getLogger("orpycamcp.webconfig")

# The HTTP middleware looks at the files at most this often.
REQUEST_CHECK_INTERVAL = 1.0

FileStamp = tuple[str, int, int, int] | tuple[str, None]


class WebConfigSource(Protocol):
    def current(self) -> WebConfig: ...


class StaticWebConfig:
    """A web configuration that never changes (no --web.config.file, or the tests)."""

    def __init__(self, config: WebConfig) -> None:
        self.config = config

    def current(self) -> WebConfig:
        return self.config


def _stamp(path: str) -> FileStamp:
    try:
        status = os.stat(path)
    except OSError:
        return (path, None)
    return (path, status.st_mtime_ns, status.st_size, status.st_ino)


def _files(path: str, config: WebConfig) -> tuple[str, ...]:
    tls = config.tls
    if tls is None:
        return (path,)
    return (path, tls.cert_file, tls.key_file, *((tls.client_ca_file,) if tls.client_ca_file else ()))


def _fixed(tls: TlsConfig | None) -> tuple[object, ...]:
    """What a running server cannot change on a live listener: TLS on or off, the
    client-certificate policy and the protocol versions."""
    if tls is None:
        return (None,)
    return (tls.client_auth, tls.min_version, tls.max_version)


class ReloadingWebConfig:
    """The last valid web configuration of `path`, reloaded when a file it reads changes."""

    def __init__(self, path: str, initial: WebConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._config = initial
        self._context = initial.tls.context() if initial.tls is not None else None
        self._clock = clock
        self._checked_at = clock()
        # The stamps of the files last read, valid or not: an invalid state is reported once.
        self._stamps = self._stamp_files(initial)
        self.reloads = 0

    def _stamp_files(self, config: WebConfig) -> tuple[FileStamp, ...]:
        return tuple(_stamp(file) for file in _files(self.path, config))

    def current(self) -> WebConfig:
        if self._clock() - self._checked_at >= REQUEST_CHECK_INTERVAL:
            self.check()
        return self._config

    @property
    def context(self) -> ssl.SSLContext | None:
        return self._context

    def server_context(self) -> ssl.SSLContext:
        """The SSLContext the listener is created with: each handshake gets the current one."""
        assert self._context is not None, "server_context() needs TLS in the web config"
        self._context.sni_callback = self._on_client_hello
        return self._context

    def _on_client_hello(self, connection: ssl.SSLObject, server_name: str | None, offered: ssl.SSLContext) -> None:
        self.check()
        if self._context is not None and self._context is not offered:
            connection.context = self._context

    def check(self, why: str | None = None) -> bool:
        """Reload if a file changed (or unconditionally, `why` naming the cause); True if reloaded."""
        self._checked_at = self._clock()
        stamps = self._stamp_files(self._config)
        if why is None and stamps == self._stamps:
            return False
        self._stamps = stamps
        try:
            config = load_web_config(self.path)
            if _fixed(config.tls) != _fixed(self._config.tls):
                raise ConfigError(
                    SETTING,
                    "turning TLS on or off, or changing client_auth_type, min_version or max_version, takes a restart",
                )
            context = config.tls.context() if config.tls is not None else None
        except (ConfigError, EncryptedKey, ssl.SSLError, OSError) as exc:
            log.error("web config %s not reloaded, the last valid one stays in force: %s", self.path, exc)
            return False
        self._stamps = self._stamp_files(config)
        self._config = config
        self._context = context
        self.reloads += 1
        log.info(
            "web config %s reloaded (%s): %s, %d basic-auth users",
            self.path,
            why or "a file changed",
            "TLS" if config.tls is not None else "no TLS",
            len(config.basic_auth_users),
        )
        return True
