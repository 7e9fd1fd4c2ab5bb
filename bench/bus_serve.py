"""`orpycamcp-exporter serve` with every signal's TTL forced to 0 (each scrape
measures again), for bench/bus_size.py. Run as a script with the exporter's
source tree first on PYTHONPATH, so that the code of another commit (the
`--before` tree) is served the same way:

    PYTHONPATH=/path/to/tree python bench/bus_serve.py serve --redis.url ... [serve options]
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import exporter.http.server
from exporter.cli import main
from exporter.service import build_exporter


def build_untimed(settings: Any) -> Any:  # the types of whichever tree is served
    built = build_exporter(settings)
    for cache in built.caches.values():
        cache.ttl = 0
    stalls = os.environ.get("ORPYCAMCP_BENCH_STALLS")
    if stalls:
        watch_from_first_scrape(built, Path(stalls))
    return built


def watch_from_first_scrape(built: Any, output: Path) -> None:
    """bench/stalls.py's watcher on the serving loop, started by the first scrape."""
    import exporter.cache
    import exporter.page
    from bench.stalls import StallWatch

    scrape = built.scrape
    watching: list[StallWatch] = []
    measure, made = vars(exporter.cache)["measure"], exporter.page._made

    async def marked_measure(*args: Any, **kwargs: Any) -> Any:
        outcome = await measure(*args, **kwargs)
        watching[0].mark("measured")
        return outcome

    def marked_made(*args: Any) -> Any:
        page = made(*args)
        watching[0].mark("page made")
        return page

    vars(exporter.cache)["measure"] = marked_measure
    exporter.page._made = marked_made  # type: ignore[assignment]

    async def watched_scrape(*args: Any, **kwargs: Any) -> Any:
        if not watching:
            watching.append(StallWatch(asyncio.get_running_loop(), output))
        watching[0].mark("scrape")
        try:
            return await scrape(*args, **kwargs)
        finally:
            watching[0].mark("scraped")

    built.scrape = watched_scrape


exporter.http.server.build_exporter = build_untimed  # type: ignore[attr-defined,assignment]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
