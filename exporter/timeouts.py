"""Every time limit of the exporter, derived once from the measurement deadline.

Nothing else does timeout arithmetic: the clients, the cache, the /metrics
endpoint, `diagnose` and the tests all read this one value.
"""

from __future__ import annotations

from dataclasses import dataclass

# The client waits this much past the server's statement timeout: a stalled
# network never delivers the server's cancellation, so the client must give up
# on its own, but later than the server so the server's clearer error wins.
CLIENT_GRACE_SECONDS = 1.0
# A scrape waits this much past the deadline for a measurement in flight: the
# measurement's own deadline error (a reason in the log) lands before the scrape
# gives up on it.
SCRAPE_GRACE_SECONDS = 0.5
# Answer this much before Prometheus' scrape timeout, so the reply is sent
# (and a signal not ready in time reported unmeasured) before Prometheus gives up.
SCRAPE_TIMEOUT_MARGIN_SECONDS = 0.5
# However short the scrape timeout, a scrape may wait this long for a cached or
# nearly finished measurement.
MIN_SCRAPE_WAIT_SECONDS = 0.05
# A statement waiting on another session's lock gives up after this share of
# the deadline, so the connection it holds serves the other signals in time.
LOCK_SHARE_OF_DEADLINE = 0.25


@dataclass(frozen=True)
class Timeouts:
    """The limits of one measurement and of one scrape, in seconds.

    - `deadline`: a measurement is cut here (the signal is then unmeasured).
    - `statement`: PostgreSQL's statement_timeout: the server cuts a statement
      at the deadline, never later.
    - `lock`: PostgreSQL's lock_timeout, a quarter of the deadline.
    - `connect`: opening a connection (PostgreSQL or Redis) takes at most the deadline.
    - `client`: how long the client waits for a statement's reply, the statement
      timeout plus a grace (see CLIENT_GRACE_SECONDS).
    - `per_sentinel(n)`: one sentinel's answer, a share of the deadline.
    - `scrape_budget`: how long a scrape without a scrape-timeout header waits
      for measurements in flight, the deadline plus a grace.
    """

    deadline: float

    @property
    def statement(self) -> float:
        return self.deadline

    @property
    def lock(self) -> float:
        return self.deadline * LOCK_SHARE_OF_DEADLINE

    @property
    def connect(self) -> float:
        return self.deadline

    @property
    def client(self) -> float:
        return self.statement + CLIENT_GRACE_SECONDS

    @property
    def scrape_budget(self) -> float:
        return self.deadline + SCRAPE_GRACE_SECONDS

    def per_sentinel(self, sentinels: int) -> float:
        """How long one sentinel may take to answer or connect: the sentinels are asked
        all at once for the master, and one after the other for why there is none,
        so that stalled ones leave time for the others and for the read itself
        within the deadline."""
        return self.deadline / (sentinels + 1)

    def bounded_wait(self, wait: float | None) -> float:
        """How long a scrape that may wait `wait` seconds (None: unbounded) waits for
        a measurement under these limits: never past the scrape budget."""
        return self.scrape_budget if wait is None else min(wait, self.scrape_budget)


def header_wait(scrape_timeout: float | None) -> float | None:
    """How long any scrape may wait, given Prometheus' scrape timeout (None: not sent):
    the bound of every answer, whatever a signal's own deadline."""
    if scrape_timeout is None:
        return None
    return max(scrape_timeout - SCRAPE_TIMEOUT_MARGIN_SECONDS, MIN_SCRAPE_WAIT_SECONDS)
