"""Logs: JSON lines with stable keys, one warning per failed measurement, no secrets."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from devkit.process import exporter_process
from exporter.logs import JsonFormatter
from tests.scrapes import DATABASE_SIGNALS


def test_json_formatter_keeps_the_structured_keys() -> None:
    record = logging.LogRecord("orpycamcp.measure", logging.WARNING, __file__, 1, "signal %s down", ("dlq",), None)
    record.signal = "dlq"
    record.reason = "timeout"
    record.duration_ms = 12.5
    entry = json.loads(JsonFormatter().format(record))
    assert entry["level"] == "warning"
    assert entry["msg"] == "signal dlq down"
    assert (entry["signal"], entry["reason"], entry["duration_ms"]) == ("dlq", "timeout", 12.5)
    assert entry["ts"].endswith("Z")


def test_failed_measurements_are_logged_as_json_once_per_ttl_without_the_password(tmp_path: Path) -> None:
    url = "postgresql://orpycamcp_exporter:hunter2-secret@127.0.0.1:9/platform"
    args = ["--database.url", url, "--log.format", "json", "--ttl", "30", "--deadline", "1"]
    with exporter_process(args, tmp_path) as process:
        for _ in range(3):
            assert httpx.get(process.url + "/metrics", timeout=10).status_code == 200
        text = process.log()
    assert "hunter2" not in text
    entries = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert entries, text
    assert all(line.startswith("{") for line in text.splitlines() if line.strip()), text
    failures = [entry for entry in entries if entry.get("reason")]
    assert sorted(entry["signal"] for entry in failures) == sorted(DATABASE_SIGNALS)
    for entry in failures:
        assert entry["level"] == "warning"
        assert entry["reason"] == "connection_error"
        assert isinstance(entry["duration_ms"], float)


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_startup_line_names_the_signals(tmp_path: Path, log_format: str) -> None:
    args = ["--database.url", "postgresql://u:p@127.0.0.1:9/db", "--log.format", log_format]
    with exporter_process(args, tmp_path) as process:
        text = process.log()
    names = ",".join(DATABASE_SIGNALS)
    assert f"serving signals {names} on 127.0.0.1:{process.port}, TLS off, basic auth off" in text
