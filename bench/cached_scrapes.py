"""Cached scrapes under wrk: the exporter serving its cached page, beside a
constant-body app (what uvicorn costs) and prometheus_client serving the same page."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
import tempfile

from bench.figures import HttpFigures
from bench.lifecycle import exporter_command, get, serve
from bench.machine import proc_status
from devkit.servers import free_port


def wrk(port: int, seconds: int, gzip_ok: bool) -> tuple[float, float, float]:
    command = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency"]
    if gzip_ok:
        command += ["-H", "Accept-Encoding: gzip"]
    out = subprocess.run([*command, f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True, check=True)
    text = out.stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))  # type: ignore[union-attr]

    def latency(percent: str) -> float:
        match = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", text, re.MULTILINE)
        assert match is not None, text
        scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[match.group(2)]
        return float(match.group(1)) * scale

    if "Non-2xx" in text or "Socket errors" in text:
        print(f"wrk reported errors:\n{text}", file=sys.stderr)
    return rate, latency("50"), latency("99")


def measure_http(url: str, seconds: int) -> tuple[list[HttpFigures], int, float]:
    """Cached /metrics under wrk for the exporter and the two reference apps."""
    figures: list[HttpFigures] = []
    port = free_port()
    with serve(exporter_command(url, port, 600), port) as process:
        page = get(port)  # the refresh; every request below is served from the cache
        for gzip_ok in (False, True):
            rate, p50, p99 = wrk(port, seconds, gzip_ok)
            size = len(gzip.compress(page, mtime=0)) if gzip_ok else len(page)
            figures.append(HttpFigures("exporter", "gzip" if gzip_ok else "identity", rate, p50, p99, size))
        rss = round(proc_status(process.pid).get("VmRSS", 0), 1)
    series = sum(1 for line in page.decode().splitlines() if line and not line.startswith("#"))
    with tempfile.NamedTemporaryFile(suffix=".prom") as page_file:
        page_file.write(page)
        page_file.flush()
        for app in ("constant", "prometheus_client"):
            port = free_port()
            command = [sys.executable, "-m", "bench.http_apps", app, str(port), page_file.name]
            with serve(command, port):
                for gzip_ok in (False, True):
                    rate, p50, p99 = wrk(port, seconds, gzip_ok)
                    size = len(get(port, gzip_ok))
                    figures.append(HttpFigures(app, "gzip" if gzip_ok else "identity", rate, p50, p99, size))
    return figures, series, rss
