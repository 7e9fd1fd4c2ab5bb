"""The housekeeping benchmark: the refresh of the PostgreSQL signals with
housekeeping against the same refresh without it, in the same run, on the same
tenants (bench/paired.py).

Each tenant (devkit/tenants.py) holds 13 or 14 resolved dead letters and 20
notification dedup rows; housekeeping's oldest resolved dead letter per
origin_group and oldest dedup row must equal the values the tenants were
created with, and no terminal row lacks its resolved_at.

    .venv/bin/python -m bench.housekeeping                 # 10,000 tenants, 3 pairs
    .venv/bin/python -m bench.housekeeping --tenants 1000 --runs 2

Writes bench/results/housekeeping-<date>.json and prints the markdown rows.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from bench.paired import Bench, Exact, main
from devkit.tenants import expected_totals
from registry.families import HOUSEKEEPING_DEDUP_OLDEST, HOUSEKEEPING_TERMINAL_OLDEST, HOUSEKEEPING_TERMINAL_UNDATED


def housekeeping_exact(tenants: int) -> Exact:
    totals = expected_totals(1, tenants)
    assert totals.oldest_processed is not None
    want: dict[tuple[str, tuple[str, ...]], float] = {
        (HOUSEKEEPING_TERMINAL_OLDEST.name, (g,)): at.timestamp() for g, at in totals.oldest_resolved.items()
    }
    want[(HOUSEKEEPING_DEDUP_OLDEST.name, ())] = totals.oldest_processed.timestamp()

    def exact(samples: Sequence[Any]) -> bool:
        got = {(s.family, tuple(s.labels)): s.value for s in samples if s.family != HOUSEKEEPING_TERMINAL_UNDATED.name}
        undated = [s.value for s in samples if s.family == HOUSEKEEPING_TERMINAL_UNDATED.name]
        return got == want and all(value == 0 for value in undated)

    return exact


BENCH = Bench(
    name="housekeeping",
    added="housekeeping",
    exact=housekeeping_exact,
    read="every tenant, batched",
    password="bench-housekeeping-exporter",  # noqa: S106 -- a throwaway server's role
)


if __name__ == "__main__":
    sys.exit(main(BENCH, __doc__))
