"""Prometheus text exposition format 0.0.4: samples in, bytes out.

Pure: no I/O, no clock. Families come in the order given (registry order),
label pairs in the family's label order; a family without samples is left out.
Consecutive parts of one family (same name) share one HELP and TYPE header.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from exporter.samples import Sample
from registry import Family

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class FamilySamples(NamedTuple):
    family: Family
    samples: Sequence[Sample]


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(value: float) -> str:
    """The value as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it, like the
    official client libraries: shortest round-trip digits, exponent form from 1e+06."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    # repr() gives the shortest digits that round-trip, as Go's shortest mode does.
    mantissa, _, exponent_text = f"{abs(value)!r}".partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + (int(exponent_text) if exponent_text else 0) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0")
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


LINES_PER_CHUNK = 1024  # lines rendered, joined and encoded at a time (a millisecond or two)


def render(families: Sequence[FamilySamples]) -> bytes:
    return b"".join(rendered(families))


def rendered(families: Sequence[FamilySamples]) -> Iterator[bytes]:
    """The page, a chunk of lines at a time: a page of a hundred thousand series
    takes a second to render, which the event loop does between other work
    (exporter/page.py), and one join and encode of all its lines would hold
    the interpreter for tens of milliseconds."""
    lines: list[str] = []
    written: str | None = None
    for family, samples in families:
        if not samples:
            continue
        if family.name != written:
            lines.append(f"# HELP {family.name} {escape_help(family.help)}")
            lines.append(f"# TYPE {family.name} {family.type.value}")
            written = family.name
        for sample in samples:
            if sample.labels:
                pairs = ",".join(
                    f'{label}="{escape_label_value(value)}"'
                    for label, value in zip(family.labels, sample.labels, strict=True)
                )
                lines.append(f"{family.name}{{{pairs}}} {format_value(sample.value)}")
            else:
                lines.append(f"{family.name} {format_value(sample.value)}")
            if len(lines) >= LINES_PER_CHUNK:
                yield _encoded(lines)
                lines = []
    if lines:
        yield _encoded(lines)


def _encoded(lines: list[str]) -> bytes:
    """Lines, each ended by a newline, as UTF-8."""
    lines.append("")
    return "\n".join(lines).encode("utf-8")
