"""`orpycamcp-exporter demo`: a real throwaway PostgreSQL and Redis, served,
and everything removed on Ctrl-C."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from devkit.servers import free_port
from exporter.options import flag_of
from tests.scrapes import parse

EXAMPLE_BACKLOGS = Path(__file__).resolve().parents[3] / "deploy" / "backlogs.example.yml"


def test_demo_serves_a_readable_page_and_cleans_up(tmp_path: Path) -> None:
    # A temporary directory of the demo's own (short: PostgreSQL's socket lives
    # there), so that servers of tests running beside it do not count.
    demo_tmp = Path(tempfile.mkdtemp(prefix="demo-", dir="/tmp"))
    demo_tmp.chmod(0o755)  # as /tmp: PostgreSQL may run as another user than the test
    port = free_port()
    log_path = tmp_path / "demo.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            # As scripts/demo runs it: with the example backlogs, whose tables the demo loads.
            [
                sys.executable,
                "-m",
                "exporter",
                "demo",
                "--backlogs.config-file",
                str(EXAMPLE_BACKLOGS),
                "--web.listen-address",
                f"127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=log,
            env={**os.environ, "TMPDIR": str(demo_tmp)},
        )
    try:
        deadline = time.monotonic() + 60
        response = None
        while time.monotonic() < deadline and process.poll() is None:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=15)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert response is not None, log_path.read_text()
        page = parse(response.content)
        assert f"http://127.0.0.1:{port}/metrics" in log_path.read_text()
        for signal_name in (
            "dlq",
            "preservation",
            "audit_chain",
            "migration_lock",
            "housekeeping",
            "streams",
            "kyc_dead_letters",
            "outbox",
        ):
            assert page.measured(signal_name) == 1, (signal_name, log_path.read_text())
        assert page.get("orpycamcp_dlq_pending_events", origin_group="signature-service") == 3
        assert page.get("orpycamcp_preservation_exhausted_artifacts", artifact="document", phase="sealing") == 2
        assert page.get("orpycamcp_audit_chain_breaks") == 1
        # demo.sql: acme's terminal dead letters resolved 1 day and 12 hours ago, a dedup row 3 days old.
        assert page.get(
            "orpycamcp_housekeeping_dead_letter_oldest_terminal_resolved_timestamp_seconds",
            origin_group="workflow-service",
        )
        assert page.get("orpycamcp_housekeeping_notification_dedup_oldest_processed_timestamp_seconds")
        pending = "orpycamcp_backlog_pending_items"
        assert page.get(pending, backlog="kyc_dead_letters", group="face_match") == 3  # acme 2 + globex (suspended) 1
        assert page.get(pending, backlog="kyc_dead_letters", group="doc_processing") == 0  # initech: provisioning
        assert page.get(pending, backlog="outbox", group="0") == 2
        assert page.get(pending, backlog="outbox", group="1") == 0
        # Rows per state and arrivals within the hour (demo.sql: acme and globex; initech is provisioning).
        items, arrivals = "orpycamcp_backlog_items", "orpycamcp_backlog_arrivals"
        kyc = {"backlog": "kyc_dead_letters", "group": "face_match"}
        assert page.get(items, **kyc, state="pending") == 3
        assert page.get(items, **kyc, state="reprocessed") == 1
        assert page.get(items, **kyc, state="discarded") == 0
        assert page.get(arrivals, **kyc, window="1h") == 2  # 15 and 50 minutes old
        assert page.get(arrivals, backlog="kyc_dead_letters", group="liveness_detection", window="1h") == 1
        assert page.get(items, backlog="outbox", group="3", state="PROCESSED") == 2
        assert page.get(arrivals, backlog="outbox", group="0", window="1h") == 1
        assert page.get(arrivals, backlog="outbox", group="0", window="24h") == 3
        # The example's declared streams: loaded by the demo, read with the built-in ones.
        billing = "orpycamcp.billing.events"
        assert page.get("orpycamcp_stream_pending_messages", stream=billing, group="invoicing") == 1
        assert page.get("orpycamcp_stream_pending_messages", stream=billing, group="ledger") == 0
        assert page.get("orpycamcp_deadletter_stream_entries", stream="orpycamcp.billing.deadletter") == 1
        # The diagnose command the demo prints reaches the same servers, as the read-only role.
        (command,) = [
            line.strip()
            for line in log_path.read_text().splitlines()
            if line.strip().startswith("orpycamcp-exporter diagnose ")
        ]
        arguments = shlex.split(command)[1:]
        assert "orpycamcp_exporter:" in command
        diagnosed = subprocess.run(
            [sys.executable, "-m", "exporter", *arguments, "--backlogs.config-file", str(EXAMPLE_BACKLOGS)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert diagnosed.returncode == 0, diagnosed.stdout + diagnosed.stderr
    finally:
        process.send_signal(signal.SIGINT)
        returncode = process.wait(timeout=30)
    assert returncode == 0, log_path.read_text()
    left = list(demo_tmp.iterdir())
    shutil.rmtree(demo_tmp, ignore_errors=True)
    assert left == []


def test_demo_refuses_the_servers_it_does_not_read() -> None:
    # The demo reads its own throwaway servers: a URL given to it is refused, one
    # line per flag, before anything starts (not silently ignored).
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "demo",
            "--database.url",
            "postgresql://u@db.example/platform",
            "--redis.url",
            "redis://cache.example:6379/0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    refusals = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(refusals) == 2, done.stderr
    assert flag_of("database_url") in refusals[0]
    assert flag_of("redis_url") in refusals[1]
    assert all("the demo reads its own throwaway servers" in line for line in refusals)
    assert "starting a throwaway PostgreSQL" not in done.stderr
