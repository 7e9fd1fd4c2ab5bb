"""The web configuration's `rate_limit` (exporter-toolkit): one token bucket for
the whole server, a token every `interval`, at most `burst` kept; a request that
finds no token is answered 429 Too Many Requests before anything else is done
for it (basic auth included), as golang.org/x/time/rate's Limiter.Allow does for
the toolkit. `interval: 0` (or no `rate_limit`) disables it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from exporter.http.reload import WebConfigSource
from exporter.http.webconfig import RateLimit


class TokenBucket:
    """golang.org/x/time/rate's Limiter: it starts full; Allow takes a token if one is there."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self.tokens = float(limit.burst)
        self.at = clock()

    def allow(self) -> bool:
        now = self.clock()
        self.tokens = min(float(self.limit.burst), self.tokens + (now - self.at) / self.limit.interval)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


class RateLimited:
    """429 for a request past the configured rate; the bucket follows the
    configuration's current `rate_limit` (a reload replaces it, full)."""

    def __init__(self, app: ASGIApp, source: WebConfigSource, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.source = source
        self.clock = clock
        self._of: RateLimit | None = None
        self._bucket: TokenBucket | None = None

    def _current(self) -> TokenBucket | None:
        limit = self.source.current().rate_limit
        if limit != self._of:
            self._of = limit
            self._bucket = TokenBucket(limit, self.clock) if limit is not None else None
        return self._bucket

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        bucket = self._current() if scope["type"] == "http" else None
        if bucket is not None and not bucket.allow():
            await PlainTextResponse("Too Many Requests\n", status_code=429)(scope, receive, send)
            return
        await self.app(scope, receive, send)
