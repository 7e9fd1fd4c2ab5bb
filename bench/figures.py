"""What the scale benchmark measures, as plain values: spreads over runs, and the
figures of the exporter, the floors, the served process and the whole run."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


@dataclass
class Spread:
    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            return cls(float("nan"), float("nan"), float("nan"), 0)
        return cls(statistics.median(values), min(values), max(values), len(values))

    def ms(self) -> str:
        if self.n == 0:
            return "-"
        if self.n == 1 or self.low == self.high:
            return f"{self.median * 1000:,.0f}"
        return f"{self.median * 1000:,.0f} ({self.low * 1000:,.0f}-{self.high * 1000:,.0f})"


@dataclass
class Backend:
    pid: int
    rss_mib: float
    anon_mib: float
    contexts_mib: float | None = None


@dataclass
class ExporterFigures:
    first: Spread
    steady: Spread
    first_by_signal: dict[str, Spread]
    steady_by_signal: dict[str, Spread]
    failures: list[str]
    statements_first: int
    statements_steady: int
    prepares_first: int
    prepares_steady: int
    backends: list[Backend]
    correct: bool


@dataclass
class FloorFigures:
    first: Spread
    steady: Spread
    statements: int
    backends: list[Backend]


@dataclass
class NaiveFigures:
    refresh: Spread
    statements: int
    capped: bool


@dataclass
class Row:
    tenants: int
    create_seconds: float
    exporter: ExporterFigures
    floor: FloorFigures
    naive: NaiveFigures | None
    exporter_rss_mib: float | None


@dataclass
class HttpFigures:
    app: str
    encoding: str
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    body_bytes: int


@dataclass
class IdleCheck:
    ttl: float
    idle_close: float
    sessions_after_scrape: int
    sessions_after_idle: int
    waited: float


@dataclass
class PoolerFigures:
    path: str
    pool_mode: str
    first: list[float] = field(default_factory=list)
    steady: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    statements_steady: int = 0
    prepares_steady: int = 0
    correct: bool | None = None


@dataclass
class PoolersReport:
    tenants: int
    runs: int
    steady: int
    before: str | None
    loadavg_start: str
    loadavg_end: str = ""
    paths: list[PoolerFigures] = field(default_factory=list)
    floors: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Report:
    started: str
    machine: dict[str, Any]
    options: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    http: list[HttpFigures] = field(default_factory=list)
    http_tenants: int | None = None
    http_series: int | None = None
    idle: IdleCheck | None = None
    poolers: PoolersReport | None = None
    exporter_rss_after_http_mib: float | None = None
    seconds: float = 0.0


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b and b == b and a == a else "-"


def save_figures(out: Path, name: str, figures: Any) -> Path:
    """`figures` (a dataclass) as bench/results/<name>-<UTC date>.json: every figure, as run."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M")
    path = out / f"{name}-{stamp}.json"
    path.write_text(json.dumps(asdict(figures), indent=1, default=str) + "\n")
    return path
