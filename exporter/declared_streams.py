"""Declared streams: the `streams:` key of the declarations file
(--backlogs.config-file), more consumer groups and dead-letter streams for
the streams signal, or for signals of their own (`signals:`, each named
`streams_<name>`: one missing group blinds only its signal), validated
completely at start.

Redis key and group names are binary-safe, but each one becomes a label
value: it must be text the exposition can carry on one line, and it must not
repeat a built-in name or another declared one (a series emitted twice).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from exporter.cadence import CADENCE_KEYS, INHERITED, DeclaredCadence, declared_cadence
from exporter.errors import BacklogConfigError
from exporter.yamlfile import excerpt
from registry.families import STREAM_SIGNAL_NAME, StreamSignalShape
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS

READ = ("consumer_groups", "dead_letter_streams")
KEYS = (*READ, "signals")
# Control characters, lone surrogates (not UTF-8) and line or paragraph separators.
REFUSED_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})


@dataclass(frozen=True)
class DeclaredStreams:
    consumer_groups: tuple[tuple[str, str], ...] = ()  # (stream, group), in declared order
    dead_letter_streams: tuple[str, ...] = ()
    # Signals of their own, each reading its pairs and dead-letter streams apart from `streams`.
    signals: tuple[StreamSignalShape, ...] = ()
    # The cadence a signal apart declares (`ttl:`, `deadline:`), by its name.
    cadences: tuple[tuple[str, DeclaredCadence], ...] = ()

    @property
    def pairs_and_dead_letters(self) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
        return self.consumer_groups, self.dead_letter_streams

    def __bool__(self) -> bool:
        return bool(self.consumer_groups or self.dead_letter_streams or self.signals)


NO_STREAMS = DeclaredStreams()
# The streams signal's own pairs and dead-letter streams as shipped; the contract's
# `signals.streams` may replace them (read_builtin_streams).
SHIPPED_STREAMS = DeclaredStreams(STREAM_GROUPS, DEADLETTER_STREAMS)
# What `signals.streams` states beside them, as printed: never replaced.
BUILTIN_FIXED = ("source", "undelivered_unknown_reasons")


class _Reader:
    def __init__(self, setting: str, builtin: DeclaredStreams = SHIPPED_STREAMS) -> None:
        self.setting = setting
        self.builtin = builtin  # the streams signal's own, in force: a declared one may not repeat them
        # Every pair and dead-letter stream declared so far: each is read by one signal only.
        self.pairs: set[tuple[str, str]] = set()
        self.dead_letters: set[str] = set()

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

    def consumer_groups(self, key: str, raw: object) -> tuple[tuple[str, str], ...]:
        if not isinstance(raw, dict) or not raw:
            raise self.fail(key, "must map each stream's name to the list of its consumer groups")
        pairs: list[tuple[str, str]] = []
        for stream_raw, groups_raw in raw.items():
            stream = self.name(key, "stream", stream_raw)
            for group in self.names(f"{key}.{stream}", "group", groups_raw):
                if (stream, group) in self.builtin.consumer_groups:
                    raise self.fail(f"{key}.{stream}", f"group {excerpt(group)} of this stream is built in already")
                if (stream, group) in self.pairs:
                    raise self.fail(f"{key}.{stream}", f"group {excerpt(group)} of this stream is declared already")
                self.pairs.add((stream, group))
                pairs.append((stream, group))
        return tuple(pairs)

    def dead_letter_streams(self, key: str, raw: object) -> tuple[str, ...]:
        streams = self.names(key, "stream", raw)
        for stream in streams:
            if stream in self.builtin.dead_letter_streams:
                raise self.fail(key, f"stream {excerpt(stream)} is built in already")
            if stream in self.dead_letters:
                raise self.fail(key, f"stream {excerpt(stream)} is declared already")
            self.dead_letters.add(stream)
        return streams

    def read(self, key: str, raw: object, keys: tuple[str, ...]) -> tuple[dict[object, object], DeclaredStreams]:
        """The pairs and dead-letter streams a mapping of `keys` declares, and the mapping."""
        if not isinstance(raw, dict) or not raw:
            raise self.fail(key, f"must map at least one of {', '.join(keys)}")
        for item in raw:
            if item not in keys:
                raise self.fail(f"{key}.{item}", f"unknown key (known: {', '.join(keys)})")
        groups = raw.get("consumer_groups")
        dead_letters = raw.get("dead_letter_streams")
        return raw, DeclaredStreams(
            self.consumer_groups(f"{key}.consumer_groups", groups) if groups is not None else (),
            self.dead_letter_streams(f"{key}.dead_letter_streams", dead_letters) if dead_letters is not None else (),
        )

    def signal(self, name: object, raw: object) -> tuple[StreamSignalShape, DeclaredCadence]:
        if not isinstance(name, str) or not STREAM_SIGNAL_NAME.fullmatch(name):
            raise self.fail(
                f"streams.signals.{name}",
                "a stream signal's name is streams_ followed by [a-z0-9_], at most 40 characters",
            )
        key = f"streams.signals.{name}"
        body, read = self.read(key, raw, (*READ, *CADENCE_KEYS))
        cadence = declared_cadence(body, lambda item, problem: self.fail(f"{key}.{item}", problem))
        return StreamSignalShape(name, read.consumer_groups, read.dead_letter_streams), cadence

    def streams(self, raw: object) -> DeclaredStreams:
        body, read = self.read("streams", raw, KEYS)
        apart: list[tuple[StreamSignalShape, DeclaredCadence]] = []
        if "signals" in body:
            declared = body["signals"]
            if not isinstance(declared, dict) or not declared:
                raise self.fail("streams.signals", "must map each stream signal's name to what it reads")
            apart = [self.signal(name, item) for name, item in declared.items()]
        return DeclaredStreams(
            read.consumer_groups,
            read.dead_letter_streams,
            tuple(shape for shape, _ in apart),
            tuple((shape.name, cadence) for shape, cadence in apart if cadence != INHERITED),
        )


def read_streams(raw: object, setting: str, builtin: DeclaredStreams = SHIPPED_STREAMS) -> DeclaredStreams:
    """The streams the `streams:` value declares beside the streams signal's own
    (`builtin`, in force); BacklogConfigError on any problem."""
    return _Reader(setting, builtin).streams(raw)


def read_builtin_streams(raw: object, setting: str, printed: dict[str, object]) -> DeclaredStreams:
    """The streams signal's own pairs and dead-letter streams, as the contract's `signals.streams`
    states them in place of the shipped ones (each required, whole: a pair left out is not read);
    `printed`: the shipped part, whose other keys (BUILTIN_FIXED) are accepted only as printed."""
    reader = _Reader(setting, NO_STREAMS)
    key = "signals.streams"
    body, read = reader.read(key, raw, (*READ, *BUILTIN_FIXED))
    for item in READ:
        if item not in body:
            raise reader.fail(f"{key}.{item}", "is required: the streams signal reads only what it lists")
    for item in BUILTIN_FIXED:
        if item in body and body[item] != printed[item]:
            raise reader.fail(f"{key}.{item}", f"is {excerpt(printed[item])} in the contract: it cannot be replaced")
    return read
