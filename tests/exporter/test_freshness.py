"""The freshness rule shared by a Redis replica and a PostgreSQL hot standby,
on the values the servers report (the servers themselves: sources/postgres/test_standby.py,
sources/redis/test_replica.py)."""

from __future__ import annotations

import math

import pytest

from exporter.errors import ReplicaStale
from exporter.freshness import ReplicaLink, redis_lag_samples, redis_link, require_fresh, standby_link
from exporter.samples import Sample
from registry.families import REDIS_REPLICA_LAG

LINK = ReplicaLink("Redis replica h:6380", 30.0, "link to its master down for 30 s")


def test_a_replica_at_the_bound_is_fresh_and_past_it_is_stale() -> None:
    require_fresh("streams", None, 0, "--redis.replica-max-staleness")  # a master: nothing to check
    require_fresh("streams", LINK, 30, "--redis.replica-max-staleness")
    with pytest.raises(ReplicaStale) as raised:
        require_fresh("streams", LINK, 29.5, "--redis.replica-max-staleness")
    stale = raised.value
    assert (stale.signal, stale.server, stale.state, stale.bound, stale.setting) == (
        "streams",
        "Redis replica h:6380",
        "link to its master down for 30 s",
        29.5,
        "--redis.replica-max-staleness",
    )


@pytest.mark.parametrize(
    ("standby", "lag", "link"),
    [
        (False, None, None),
        (False, 12.0, None),
        (True, 0.0, ReplicaLink("PostgreSQL standby", 0.0, "last replayed transaction 0 s old, not caught up")),
        (True, 12.4, ReplicaLink("PostgreSQL standby", 12.4, "last replayed transaction 12 s old, not caught up")),
        (
            True,
            None,
            ReplicaLink("PostgreSQL standby", math.inf, "has replayed no transaction and is not caught up"),
        ),
    ],
)
def test_a_standby_link_from_its_row(standby: bool, lag: float | None, link: ReplicaLink | None) -> None:
    assert standby_link(standby, lag) == link


NAME = "Redis replica h:6380"


@pytest.mark.parametrize(
    ("info", "link"),
    [
        ({"role": "master", "master_link_down_since_seconds": "40"}, None),
        ({}, None),
        (
            {"role": "slave", "master_link_status": "up", "master_last_io_seconds_ago": 3},
            ReplicaLink(NAME, 3.0, "link to its master up, last heard from it 3 s ago"),
        ),
        (
            {"role": "slave", "master_link_status": "up", "master_last_io_seconds_ago": "0"},
            ReplicaLink(NAME, 0.0, "link to its master up, last heard from it 0 s ago"),
        ),
        (  # up, but no word of when it last heard: as if down since then
            {"role": "slave", "master_link_status": "up", "master_link_down_since_seconds": 7},
            ReplicaLink(NAME, 7.0, "link to its master down for 7 s"),
        ),
        (
            {
                "role": "slave",
                "master_link_status": "down",
                "master_last_io_seconds_ago": 1,
                "master_link_down_since_seconds": "40",
            },
            ReplicaLink(NAME, 40.0, "link to its master down for 40 s"),
        ),
        (
            {"role": "slave", "master_link_status": "down", "master_link_down_since_seconds": -1},
            ReplicaLink(NAME, math.inf, "has never synchronised with its master"),
        ),
        (
            {"role": "slave", "master_link_status": "down"},
            ReplicaLink(NAME, math.inf, "has never synchronised with its master"),
        ),
    ],
)
def test_a_redis_link_from_info_replication(info: dict[str, object], link: ReplicaLink | None) -> None:
    assert redis_link("h:6380", info) == link


@pytest.mark.parametrize("value", [-1, -0.5, "-1", "abc", "", True, False, None, math.nan, math.inf, "inf", [3]])
def test_what_is_not_a_count_of_seconds_is_never_synchronised(value: object) -> None:
    info = {"role": "slave", "master_link_status": "down", "master_link_down_since_seconds": value}
    link = redis_link("h:6380", info)
    assert link is not None
    assert link.staleness == math.inf


def test_the_lag_gauge_is_absent_on_a_master_and_when_unbounded() -> None:
    assert redis_lag_samples(None) == ()
    assert redis_lag_samples(ReplicaLink(NAME, math.inf, "has never synchronised with its master")) == ()
    assert redis_lag_samples(LINK) == (Sample(REDIS_REPLICA_LAG.name, (), 30.0),)
    assert redis_lag_samples(LINK._replace(staleness=0.0)) == (Sample(REDIS_REPLICA_LAG.name, (), 0.0),)
