"""The request headers /metrics reads: Prometheus' scrape timeout and Accept-Encoding."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.http.endpoint import accepts_gzip, scrape_timeout

# --- X-Prometheus-Scrape-Timeout-Seconds ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [(b"10", 10.0), (b"12.5", 12.5), (b"0.25", 0.25), (b" 3 ", 3.0), (b"1e1", 10.0)],
)
def test_a_positive_number_is_the_scrape_timeout(raw: bytes, seconds: float) -> None:
    assert scrape_timeout(raw) == seconds


@pytest.mark.parametrize(
    "raw",
    [None, b"", b"0", b"-1", b"-0.5", b"nan", b"NaN", b"inf", b"-inf", b"Infinity", b"ten", b"10s", b"1,5", b"\xff"],
)
def test_anything_else_is_no_scrape_timeout(raw: bytes | None) -> None:
    """Absent or unusable: the scrape waits its whole budget, as without the header."""
    assert scrape_timeout(raw) is None


@given(st.floats(min_value=0, exclude_min=True, allow_nan=False, allow_infinity=False))
def test_every_positive_finite_number_reads_back(seconds: float) -> None:
    assert scrape_timeout(repr(seconds).encode("ascii")) == seconds


@given(st.binary(max_size=40))
def test_any_header_value_gives_a_usable_timeout_or_none(raw: bytes) -> None:
    """Whatever a client sends, the header never raises and never yields a wait that is not a positive number."""
    timeout = scrape_timeout(raw)
    assert timeout is None or (math.isfinite(timeout) and timeout > 0)


# --- Accept-Encoding ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"gzip",
        b"GZIP",
        b"gzip, deflate, br",
        b"br, gzip",
        b"deflate,gzip",
        b"gzip;q=1.0",
        b"gzip; q=0.5",
        b"identity;q=0.5, gzip;q=0.001",
        b"  gzip  ",
    ],
)
def test_gzip_accepted(raw: bytes) -> None:
    assert accepts_gzip(raw)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        b"",
        b"identity",
        b"deflate, br",
        b"x-gzip",
        b"gzipped",
        b"gzip;q=0",
        b"gzip; q=0.0",
        b"gzip;q=0.00",
        b"gzip; q = 0.000",
        b"br, gzip;q=0",
    ],
)
def test_gzip_not_accepted(raw: bytes | None) -> None:
    """Not offered, or refused with q=0: the page goes uncompressed."""
    assert not accepts_gzip(raw)


codings = st.sampled_from(["identity", "deflate", "br", "zstd", "compress", "x-gzip", "gzip;q=0", "br;q=0.3"])


@given(st.lists(codings, max_size=5), st.integers(min_value=0, max_value=5), st.sampled_from(["", ";q=1", ";q=0.1"]))
def test_gzip_offered_anywhere_in_the_list_is_accepted(others: list[str], position: int, weight: str) -> None:
    listed = [*others]
    listed.insert(min(position, len(listed)), "gzip" + weight)
    assert accepts_gzip(", ".join(listed).encode("latin-1"))


@given(st.lists(codings, max_size=6))
def test_a_list_without_an_acceptable_gzip_is_not(listed: list[str]) -> None:
    assert not accepts_gzip(", ".join(listed).encode("latin-1"))


@given(st.binary(max_size=60))
def test_any_header_value_is_read_without_error(raw: bytes) -> None:
    assert accepts_gzip(raw) in (True, False)
