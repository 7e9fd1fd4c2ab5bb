"""`orpycamcp-exporter serve` with every signal's TTL forced to 0 (each scrape
measures again), for bench/bus_size.py. Run as a script with the exporter's
source tree first on PYTHONPATH, so that the code of another commit (the
`--before` tree) is served the same way:

    PYTHONPATH=/path/to/tree python bench/bus_serve.py serve --redis-url ... [serve options]
"""

from __future__ import annotations

import sys
from typing import Any

import exporter.http.server
from exporter.cli import main
from exporter.service import build_exporter


def build_untimed(settings: Any) -> Any:  # the types of whichever tree is served
    built = build_exporter(settings)
    for cache in built.caches.values():
        cache.ttl = 0
    return built


exporter.http.server.build_exporter = build_untimed  # type: ignore[attr-defined,assignment]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
