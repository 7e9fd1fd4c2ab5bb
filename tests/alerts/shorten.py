"""A copy of alerts/orpycamcp.rules.yml with short durations, for fast end-to-end runs.

The shipped rules wait minutes or hours (`for:`) before firing and compare
dead-letter stream sizes with their value 15 minutes earlier (`offset`). A
Prometheus that scrapes the exporter every second can only exercise them if
those durations shrink; the value thresholds (ages in seconds, counts) are
left untouched, so the data fed to the exporter must still cross them.

    from tests.alerts.shorten import write_shortened_rules
    path = write_shortened_rules(tmp_path / "rules.yml", for_duration="2s")
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
RULES_PATH = REPO_ROOT / "alerts" / "orpycamcp.rules.yml"

_DURATION_PART = re.compile(r"(\d+)(ms|y|w|d|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_OFFSET = re.compile(r"\boffset\s+(\d+(?:ms|y|w|d|h|m|s))+")


def parse_duration(text: str) -> float:
    """Seconds in a Prometheus duration such as "1h30m" or "500ms"."""
    text = text.strip()
    if not text:
        raise ValueError("empty duration")
    position = 0
    seconds = 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            break
        seconds += int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(text):
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return seconds


def load_rules(path: Path = RULES_PATH) -> dict[str, Any]:
    """The rule file as parsed YAML."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict) or not isinstance(document.get("groups"), list):
        raise ValueError(f"{path} is not a Prometheus rule file")
    return document


def shortened_rules(
    *,
    for_duration: str = "2s",
    interval: str | None = "1s",
    offset: str | None = "10s",
    keep_firing_for: str | None = None,
    source: Path = RULES_PATH,
) -> dict[str, Any]:
    """The rule file with every `for:` and `keep_firing_for:` capped at `for_duration`.

    `interval` (if given) becomes every group's evaluation interval, and
    `offset` (if given) replaces every `offset <duration>` in the expressions;
    `keep_firing_for` (if given) replaces every rule's keep_firing_for.
    """
    parse_duration(for_duration)
    document = copy.deepcopy(load_rules(source))
    cap = parse_duration(for_duration)
    for group in document["groups"]:
        if interval is not None:
            parse_duration(interval)
            group["interval"] = interval
        for rule in group["rules"]:
            for key in ("for", "keep_firing_for"):
                if key in rule and parse_duration(str(rule[key])) > cap:
                    rule[key] = for_duration
            if keep_firing_for is not None and "keep_firing_for" in rule:
                rule["keep_firing_for"] = keep_firing_for
            if offset is not None:
                parse_duration(offset)
                rule["expr"] = _OFFSET.sub(f"offset {offset}", str(rule["expr"]))
    return document


def write_shortened_rules(
    destination: Path,
    *,
    for_duration: str = "2s",
    interval: str | None = "1s",
    offset: str | None = "10s",
    keep_firing_for: str | None = None,
    source: Path = RULES_PATH,
) -> Path:
    """Write the shortened copy (see `shortened_rules`) to `destination` and return it."""
    document = shortened_rules(
        for_duration=for_duration, interval=interval, offset=offset, keep_firing_for=keep_firing_for, source=source
    )
    destination.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return destination
