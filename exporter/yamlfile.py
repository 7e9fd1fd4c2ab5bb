"""The one way the exporter reads a YAML file: safe, small and plain.

Aliases are refused (a few hundred bytes of nested aliases expand into
gigabytes), a key given twice is refused (PyYAML keeps the last silently),
the file is capped in size, and an error never echoes more than a short
excerpt of the document."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

from exporter.printable import printable

MAX_BYTES = 1 << 20  # every file the exporter reads is a few kilobytes
MAX_ECHO = 80


class YamlError(ValueError):
    """The document is refused; the message is one short line."""


class _PlainLoader(yaml.SafeLoader):
    """A SafeLoader that refuses aliases and repeated keys."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not accepted: write the value out", event.start_mark
            )
        return super().compose_node(parent, index)


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Hashable, Any]:
    seen: set[Hashable] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {excerpt(key)} is given twice", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_PlainLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def excerpt(value: object) -> str:
    """`repr(value)`, cut to a short printable excerpt for an error message."""
    text = printable(repr(value))
    return text if len(text) <= MAX_ECHO else text[: MAX_ECHO - 3] + "..."


def parse_yaml(text: str) -> object:
    """The document `text` holds; YamlError with a one-line reason otherwise."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise YamlError(f"larger than {MAX_BYTES} bytes")
    try:
        return yaml.load(text, Loader=_PlainLoader)  # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = printable(str(getattr(exc, "problem", None) or exc))[:200]
        kind = (
            "refused"
            if isinstance(exc, yaml.constructor.ConstructorError | yaml.composer.ComposerError)
            else "not valid YAML"
        )
        raise YamlError(f"{kind}{where}: {problem}") from None


def read_capped(path: str) -> str:
    """The text of `path`, refused past MAX_BYTES before more is read; OSError and
    UnicodeDecodeError pass through for the caller to name its setting."""
    with open(path, "rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YamlError(f"larger than {MAX_BYTES} bytes")
    return data.decode("utf-8")
