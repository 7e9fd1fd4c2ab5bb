"""The clients the signals read: PostgreSQL (many tenant schemas) and Redis Streams."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from exporter.errors import SourceNotConfigured

if TYPE_CHECKING:
    from exporter.sources.postgres.source import Postgres
    from exporter.sources.redis.source import RedisStreams


@dataclass(frozen=True)
class Sources:
    """The clients the signals read; None where the source is not configured."""

    postgres: Postgres | None = None
    redis: RedisStreams | None = None

    def require_postgres(self, signal: str) -> Postgres:
        if self.postgres is None:
            raise SourceNotConfigured(signal, "PostgreSQL database")
        return self.postgres

    def require_redis(self, signal: str) -> RedisStreams:
        if self.redis is None:
            raise SourceNotConfigured(signal, "Redis")
        return self.redis

    async def close(self) -> None:
        if self.postgres is not None:
            await self.postgres.close()
        if self.redis is not None:
            await self.redis.close()
