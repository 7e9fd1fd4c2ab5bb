"""A streaming hot standby of a local test PostgreSQL, made as production makes
one: `pg_basebackup -R` from the primary, then started on a port of its own.

The primary needs nothing beyond what `start_postgres` gives it: PostgreSQL 15
defaults to wal_level=replica and 10 WAL senders, and initdb's pg_hba.conf
admits replication connections from 127.0.0.1 with a password (the superuser
`postgres` is replication-capable)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import asyncpg

from devkit.servers import LocalPostgres, ServerUnavailable, free_port
from exporter.tools.throwaway import unprivileged_user


def start_standby(primary: LocalPostgres) -> LocalPostgres:
    """A hot standby of `primary`, streaming from it, accepting read-only sessions."""
    base = Path(tempfile.mkdtemp(prefix="orpycamcp-standby-"))
    user = unprivileged_user()
    run_as: dict[str, int] = {} if user is None else {"user": user.pw_uid, "group": user.pw_gid}
    if user is not None:
        os.chown(base, user.pw_uid, user.pw_gid)
    standby = _standby_server(primary, base)
    env = {**os.environ, "PGPASSWORD": primary.password}
    done = subprocess.run(
        [
            str(primary.bindir / "pg_basebackup"),
            "--pgdata",
            str(standby.datadir),
            "--host",
            "127.0.0.1",
            "--port",
            str(primary.port),
            "--username",
            "postgres",
            "--write-recovery-conf",
            "--wal-method",
            "stream",
            "--checkpoint",
            "fast",
            "--no-sync",
        ],
        capture_output=True,
        env=env,
        check=False,
        timeout=120,
        **run_as,  # type: ignore[call-overload]
    )
    if done.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        raise ServerUnavailable("PostgreSQL standby", f"pg_basebackup failed: {done.stderr.decode(errors='replace')}")
    try:
        standby.start()
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    return standby


async def caught_up(primary_url: str, standby_url: str, within: float = 30.0) -> None:
    """Wait until the standby has replayed everything the primary has written so far."""
    primary = await asyncpg.connect(primary_url)
    try:
        target = await primary.fetchval("SELECT pg_current_wal_lsn()")
    finally:
        await primary.close()
    standby = await asyncpg.connect(standby_url)
    try:
        end = time.monotonic() + within
        while True:
            replayed = await standby.fetchval("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", target)
            receiving = await standby.fetchval("SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")
            if replayed and receiving:
                return
            if time.monotonic() > end:
                raise AssertionError(f"the standby did not replay up to {target} within {within:g} s")
            await asyncio.sleep(0.05)
    finally:
        await standby.close()


async def promote(standby_url: str) -> None:
    """End the standby's recovery: it becomes a primary of its own."""
    connection = await asyncpg.connect(standby_url)
    try:
        promoted = await connection.fetchval("SELECT pg_promote(wait => true, wait_seconds => 30)")
        if not promoted:
            raise AssertionError("the standby was not promoted within 30 s")
    finally:
        await connection.close()


def start_copied_standby(primary: LocalPostgres) -> LocalPostgres:
    """A hot standby of `primary` without pg_basebackup (the PostgreSQL majors of
    devkit.postgres_majors ship none, and another major's cannot copy it): the
    primary is stopped cleanly, its data directory copied, and the copy started
    in standby mode (standby.signal, primary_conninfo) streaming from the
    restarted primary."""
    base = Path(tempfile.mkdtemp(prefix="orpycamcp-standby-"))
    standby = _standby_server(primary, base)
    primary.stop()
    try:
        shutil.copytree(primary.datadir, standby.datadir, symlinks=True)
    finally:
        primary.start()
    (standby.datadir / "standby.signal").touch()
    conninfo = f"host=127.0.0.1 port={primary.port} user=postgres password={primary.password}"
    with (standby.datadir / "postgresql.auto.conf").open("a") as conf:
        conf.write(f"primary_conninfo = '{conninfo}'\n")
    user = unprivileged_user()
    if user is not None:
        for path in (base, *base.rglob("*")):
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
    try:
        standby.start()
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    return standby


def _standby_server(primary: LocalPostgres, base: Path) -> LocalPostgres:
    """A hot standby's server in `base`, of the primary's binaries and password."""
    return LocalPostgres(
        base=base,
        port=free_port(),
        password=primary.password,
        bindir=primary.bindir,
        settings={"hot_standby": "on", "wal_receiver_status_interval": "1s"},
    )
