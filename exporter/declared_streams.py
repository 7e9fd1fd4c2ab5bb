"""Declared streams: the `streams:` key of the declarations file
(--backlogs.config-file), more consumer groups and dead-letter streams for
the streams signal, validated completely at start.

Redis key and group names are binary-safe, but each one becomes a label
value: it must be text the exposition can carry on one line, and it must not
repeat a built-in name or another declared one (a series emitted twice).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from exporter.errors import BacklogConfigError
from exporter.yamlfile import excerpt
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS

KEYS = ("consumer_groups", "dead_letter_streams")
# Control characters, lone surrogates (not UTF-8) and line or paragraph separators.
REFUSED_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})


@dataclass(frozen=True)
class DeclaredStreams:
    consumer_groups: tuple[tuple[str, str], ...] = ()  # (stream, group), in declared order
    dead_letter_streams: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.consumer_groups or self.dead_letter_streams)


NO_STREAMS = DeclaredStreams()


class _Reader:
    def __init__(self, setting: str) -> None:
        self.setting = setting

    def fail(self, key: str, problem: str) -> BacklogConfigError:
        return BacklogConfigError(self.setting, None, key, problem)

    def name(self, key: str, kind: str, raw: object) -> str:
        if not isinstance(raw, str):
            raise self.fail(key, f"{kind} {excerpt(raw)} is not a string (quote it)")
        if not raw:
            raise self.fail(key, f"a {kind} name is empty")
        for char in raw:
            if unicodedata.category(char) in REFUSED_CATEGORIES:
                raise self.fail(key, f"{kind} {excerpt(raw)} holds the control character U+{ord(char):04X}")
        return raw

    def names(self, key: str, kind: str, raw: object) -> tuple[str, ...]:
        if not isinstance(raw, list) or not raw:
            raise self.fail(key, f"{excerpt(raw)} is not a non-empty list of {kind} names")
        names = tuple(self.name(key, kind, item) for item in raw)
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise self.fail(key, f"{kind} {excerpt(repeated[0])} is declared twice")
        return names

    def consumer_groups(self, raw: object) -> tuple[tuple[str, str], ...]:
        key = "streams.consumer_groups"
        if not isinstance(raw, dict) or not raw:
            raise self.fail(key, "must map each stream's name to the list of its consumer groups")
        pairs: list[tuple[str, str]] = []
        for stream_raw, groups_raw in raw.items():
            stream = self.name(key, "stream", stream_raw)
            for group in self.names(f"{key}.{stream}", "group", groups_raw):
                if (stream, group) in STREAM_GROUPS:
                    raise self.fail(f"{key}.{stream}", f"group {excerpt(group)} of this stream is built in already")
                pairs.append((stream, group))
        return tuple(pairs)

    def dead_letter_streams(self, raw: object) -> tuple[str, ...]:
        key = "streams.dead_letter_streams"
        streams = self.names(key, "stream", raw)
        for stream in streams:
            if stream in DEADLETTER_STREAMS:
                raise self.fail(key, f"stream {excerpt(stream)} is built in already")
        return streams

    def streams(self, raw: object) -> DeclaredStreams:
        if not isinstance(raw, dict) or not raw:
            raise self.fail("streams", f"must map at least one of {', '.join(KEYS)}")
        for key in raw:
            if key not in KEYS:
                raise self.fail(f"streams.{key}", f"unknown key (known: {', '.join(KEYS)})")
        return DeclaredStreams(
            self.consumer_groups(raw["consumer_groups"]) if "consumer_groups" in raw else (),
            self.dead_letter_streams(raw["dead_letter_streams"]) if "dead_letter_streams" in raw else (),
        )


def read_streams(raw: object, setting: str) -> DeclaredStreams:
    """The streams the `streams:` value declares; BacklogConfigError on any problem."""
    return _Reader(setting).streams(raw)
