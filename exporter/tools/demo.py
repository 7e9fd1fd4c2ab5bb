"""`orpycamcp-exporter demo`: the exporter against a throwaway PostgreSQL (and
Redis when a redis-server binary is there), loaded with demo data."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from collections.abc import Mapping
from typing import Any

import asyncpg
import redis.asyncio

from exporter import logs
from exporter.contract import sql
from exporter.declared_streams import NO_STREAMS, SHIPPED_STREAMS, DeclaredStreams
from exporter.errors import ConfigError, InvalidSettings
from exporter.loading import load
from exporter.options import OptionName, flag_of
from exporter.settings import OPTIONS_BY_NAME
from exporter.tools.throwaway import LocalPostgres, LocalRedis, ServerUnavailable, start_postgres, start_redis

EXPORTER_ROLE = "orpycamcp_exporter"
# The demo's own servers are the only ones it reads: these options are refused, not ignored.
OWN_SERVERS: tuple[OptionName, ...] = ("database_url", "database_url_file", "redis_url", "redis_url_file")
# A demo serves on loopback unless told otherwise: its throwaway database has a printed password.
DEMO_LISTEN_ADDRESS = "127.0.0.1:9874"


async def load_contract(url: str, *, demo_data: bool, exporter_password: str | None) -> None:
    """Reference DDL, optional demo rows, and the read-only exporter role."""
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(sql("contract.sql"))
        if demo_data:
            await connection.execute(sql("demo.sql"))
        await connection.execute(sql("grants.sql"))
        if exporter_password is not None:
            await connection.execute(f"ALTER ROLE {EXPORTER_ROLE} PASSWORD '{exporter_password}'")
    finally:
        await connection.close()


async def load_demo_streams(
    url: str, declared: DeclaredStreams = NO_STREAMS, builtin: DeclaredStreams = SHIPPED_STREAMS
) -> None:
    """Consumer groups with a few unacknowledged messages and a dead-letter entry (the
    streams signal's own: shipped, or those the contract lists in their place); the
    declared groups (one message each, the first group's delivered and not acknowledged)
    and a dead-letter entry in the first declared dead-letter stream."""
    client = redis.asyncio.Redis.from_url(url, decode_responses=True)
    try:
        for stream, group in builtin.consumer_groups + declared.consumer_groups:
            await client.xgroup_create(stream, group, id="0", mkstream=True)
            await client.xadd(stream, {"event": "document.signed"})
        if builtin.consumer_groups:
            stream, group = builtin.consumer_groups[0]
            await client.xreadgroup(group, "demo-consumer", {stream: ">"}, count=1)
        for stream in builtin.dead_letter_streams[:1]:
            await client.xadd(stream, {"event": "document.signed", "error": "certificate expired"})
        if declared.consumer_groups:
            stream, group = declared.consumer_groups[0]
            await client.xreadgroup(group, "demo-consumer", {stream: ">"}, count=1)
        for stream in declared.dead_letter_streams[:1]:
            await client.xadd(stream, {"event": "invoice.issued", "error": "ledger closed"})
    finally:
        await client.aclose()


def run_demo(values: Mapping[str, Any]) -> int:
    """Raises ConfigError or ListenError (the CLI's exit 2) before starting anything."""
    from exporter.http.listen import bind
    from exporter.http.server import serve

    refused = tuple(
        ConfigError(flag_of(name), "the demo reads its own throwaway servers; give it to serve or diagnose instead")
        for name in OWN_SERVERS
        if values.get(name) is not None
    )
    if refused:
        raise InvalidSettings(refused)
    listen_given = values.get("web_listen_address") is not None or any(
        name in os.environ for name in OPTIONS_BY_NAME["web_listen_address"].envs
    )
    if not listen_given:
        values = {**values, "web_listen_address": DEMO_LISTEN_ADDRESS}
    # The options checked, and the port taken, before any server starts or any URL is printed.
    checked = load(
        {**values, "database_url": "postgresql://demo@127.0.0.1/demo", "redis_url": "redis://127.0.0.1"}, os.environ
    )
    listener = bind(*checked.web_listen_address)
    print("starting a throwaway PostgreSQL ...", file=sys.stderr)
    postgres: LocalPostgres | None = None
    redis_server: LocalRedis | None = None
    try:
        postgres = start_postgres()
        password = secrets.token_urlsafe(16)
        asyncio.run(load_contract(postgres.url(), demo_data=True, exporter_password=password))
        try:
            redis_server = start_redis()
            asyncio.run(load_demo_streams(redis_server.url, checked.streams, checked.bus or SHIPPED_STREAMS))
        except ServerUnavailable as exc:
            print(f"{exc}; the streams signal stays off", file=sys.stderr)
        overrides = dict(values)
        overrides["database_url"] = postgres.url(user=EXPORTER_ROLE, password=password)
        if redis_server is not None:
            overrides["redis_url"] = redis_server.url
        settings = load(overrides, os.environ)
        logs.configure(settings.log_format, settings.log_level)
        host, port = settings.web_listen_address
        host = "localhost" if host in ("0.0.0.0", "::", "") else host
        read_only = [f"{flag_of('database_url')} '{overrides['database_url']}'"]
        if redis_server is not None:
            read_only.append(f"{flag_of('redis_url')} '{redis_server.url}'")
        print(
            f"demo exporter: http://{host}:{port}/metrics (Ctrl-C stops and removes everything)\n"
            f"try diagnose on the same servers (the exporter's read-only role):\n"
            f"  orpycamcp-exporter diagnose {' '.join(read_only)}",
            file=sys.stderr,
            flush=True,
        )
        return serve(settings, listener)
    except ServerUnavailable as exc:
        print(f"orpycamcp-exporter demo: {exc}", file=sys.stderr)
        return 1
    finally:
        listener.close()
        if redis_server is not None:
            redis_server.remove()
        if postgres is not None:
            postgres.remove()
