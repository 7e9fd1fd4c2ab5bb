"""The one way the exporter reads a YAML file: safe, small and plain.

Aliases are refused (a few hundred bytes of nested aliases expand into
gigabytes), a key given twice is refused (PyYAML keeps the last silently),
the file is capped in size, and an error never echoes more than a short
excerpt of the document. What PyYAML itself would crash on, or hand on to
fail later, is refused here with a line of its own: nesting deeper than
MAX_DEPTH (its composer recurses), a mapping key that is a list or a mapping
(not hashable), an integer outside 64 bits (Python refuses to convert more
than 4,300 digits; PostgreSQL and the exposition take 64 bits at most).

The work is bounded, not only the bytes. PyYAML's pure-Python scanner reads
about a megabyte a second and some 20,000 nodes a second, so a file under the
size cap could hold seconds of scanning (a megabyte of quotes or spaces) and
minutes of work in nodes (a flow list of 300,000 one-letter items). The events
are read with LibYAML's parser (bundled in PyYAML's wheels; the pure-Python one
when PyYAML was built without it), which scans a megabyte in milliseconds and
only as far as the composer asks; the composer stays PyYAML's, counting: a
document of more than MAX_NODES nodes, or more than MAX_LINES lines, is refused
as soon as the count is passed, before the rest is read. Every file under the
cap is refused or loaded within a fraction of a second (bench/config_files.py).

A file that holds credentials (the web configuration) is parsed with
`secret=True`: no refusal then quotes anything of the document (a scalar, a
tag such as `!Secr3tPassw0rd`, a character), only where (line, column, and
the keys that lead there: the format's own names, any other key by its place,
`basic_auth_users > entry 1`) and what is wrong."""

from __future__ import annotations

import re
from collections.abc import Collection, Hashable
from typing import TYPE_CHECKING, Any

import yaml

from exporter.printable import printable

MAX_BYTES = 1 << 20  # every file the exporter reads is a few kilobytes
MAX_ECHO = 80
MAX_DEPTH = 32  # the deepest file the exporter reads nests 5 levels
INT_BITS = 63  # a signed 64-bit integer: what PostgreSQL's bigint and the page hold
_MAX_INT_TEXT = 80  # longer than any 64-bit integer in any YAML notation
# The largest file the exporter is given (a declarations file of a few backlogs of a
# thousand groups each) holds a few thousand nodes; the composer takes 10,000 in about 0.2 s.
MAX_NODES = 10_000
MAX_LINES = 50_000  # blank and comment lines included: a line costs the scanner work too
# A quoted piece of a PyYAML problem ('x', "\t", '!Secr3tPassw0rd'): removed in secret mode.
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


class YamlError(ValueError):
    """The document is refused; the message is one short line."""


class _Bounded(yaml.composer.Composer, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
    """PyYAML's composer and safe constructor, refusing aliases and repeated keys,
    counting nodes and knowing where each node is (the keys and items that lead to
    it); the events come from the parser the loader below is built on."""

    _depth = 0
    _nodes = 0
    quotes = True  # whether a refusal may quote a key of the document
    names: Collection[str] = ()  # the keys a refusal may name when it quotes none

    if TYPE_CHECKING:  # the parser's, from the class the loader is built on

        def peek_event(self) -> Any: ...

        def check_event(self, *choices: Any) -> bool: ...

        def dispose(self) -> None: ...

    def begin(self, *, quotes: bool, names: Collection[str]) -> None:
        self.quotes = quotes
        self.names = names
        self._path: list[str] = []
        self._node_paths: dict[int, tuple[str, ...]] = {}
        self.where: tuple[str, ...] | None = None  # where the refusal is, once there is one

    def _step(self, parent: yaml.Node | None, index: object) -> str | None:
        """How the node composed under `parent` at `index` is named in a refusal."""
        if isinstance(parent, yaml.SequenceNode):
            return f"item {len(parent.value) + 1}"
        if not isinstance(parent, yaml.MappingNode):
            return None
        entry = f"entry {len(parent.value) + 1}"
        if index is None:
            return f"the key of {entry}"
        key = index.value if isinstance(index, yaml.ScalarNode) else None
        return key if isinstance(key, str) and key in self.names else entry

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        step = self._step(parent, index)
        if step is not None:
            self._path.append(step)
        try:
            node = self._compose_counted(parent, index)
        except yaml.YAMLError:
            if self.where is None:
                self.where = tuple(self._path)
            raise
        finally:
            if step is not None:
                self._path.pop()
        if node is not None:
            self._node_paths[id(node)] = (*self._path, step) if step is not None else tuple(self._path)
        return node

    def _compose_counted(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not accepted: write the value out", event.start_mark
            )
        if self._depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise yaml.composer.ComposerError(
                None, None, f"more than {MAX_NODES:,} values (keys, items, scalars) in one file", event.start_mark
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """A value its tag cannot make (`2024-02-30`, `!!int abc`, `!!map x`) is refused
        like any other YAML error, not raised as whatever PyYAML's constructor raised."""
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            self._note_where(node)
            raise
        except Exception:  # every constructor failure is one refusal
            self._note_where(node)
            tag = node.tag.rpartition(":")[2]
            raise yaml.constructor.ConstructorError(
                None, None, f"a value that is not a valid {tag}", node.start_mark
            ) from None

    def _note_where(self, node: yaml.Node) -> None:
        """The refusal is at `node`, unless a node inside it was named first."""
        if self.where is None:
            self.where = self._node_paths.get(id(node), ())


def _construct_mapping(loader: _Bounded, node: yaml.MappingNode) -> dict[Hashable, Any]:
    seen: set[Hashable] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key is a list or a mapping: keys are names", key_node.start_mark
            )
        key = loader.construct_object(key_node)
        if key in seen:
            named = f"key {excerpt(key)}" if loader.quotes else "a key"
            raise yaml.constructor.ConstructorError(None, None, f"{named} is given twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


def _construct_int(loader: _Bounded, node: yaml.ScalarNode) -> int:
    too_large = yaml.constructor.ConstructorError(
        None, None, f"an integer outside the 64-bit range (-2^{INT_BITS} to 2^{INT_BITS}-1)", node.start_mark
    )
    if len(node.value) > _MAX_INT_TEXT:
        raise too_large
    value: int = loader.construct_yaml_int(node)
    if not -(1 << INT_BITS) <= value < 1 << INT_BITS:
        raise too_large
    return value


def _construct_str(loader: _Bounded, node: yaml.ScalarNode) -> str:
    """A string, refused when it holds a lone surrogate ("\\ud800"): no page, log or
    message could be written in UTF-8 with it."""
    value = loader.construct_scalar(node)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise yaml.constructor.ConstructorError(
            None, None, "a string with a lone surrogate escape (not Unicode text)", node.start_mark
        ) from None
    return value


_Bounded.yaml_constructors = {
    **yaml.constructor.SafeConstructor.yaml_constructors,
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG: _construct_mapping,
    "tag:yaml.org,2002:str": _construct_str,
    "tag:yaml.org,2002:int": _construct_int,
}


class _PythonLoader(_Bounded, yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """Events from PyYAML's pure-Python parser: when PyYAML was built without LibYAML."""

    def __init__(self, data: bytes) -> None:
        yaml.reader.Reader.__init__(self, data)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)


if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _LibYamlLoader(_Bounded, CParser):
        """Events from LibYAML's parser, one at a time as the composer asks."""

        def __init__(self, data: bytes) -> None:
            CParser.__init__(self, data)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    LOADER: type[_PythonLoader | _LibYamlLoader] = _LibYamlLoader
else:  # pragma: no cover -- PyYAML's wheels bundle LibYAML
    LOADER = _PythonLoader


def _unquoted(problem: str) -> str:
    """A PyYAML problem without the pieces of the document it quotes (a tag, a
    character, a token's text); nothing of it when a quote is left unmatched."""
    stripped = _QUOTED.sub("(not shown)", problem)
    return stripped if "'" not in stripped and '"' not in stripped else "(not shown: it quotes the file)"


def excerpt(value: object) -> str:
    """`repr(value)`, cut to a short printable excerpt for an error message."""
    text = printable(repr(value))
    return text if len(text) <= MAX_ECHO else text[: MAX_ECHO - 3] + "..."


def _where(mark: Any, path: tuple[str, ...] | None, secret: bool) -> str:
    """Where a refusal is: its line; in a secret file also its column and the keys that lead there."""
    if mark is None:
        return ""
    if not secret:
        return f" (line {mark.line + 1})"
    keys = f", at {' > '.join(path)}" if path else ""
    return f" (line {mark.line + 1}, column {mark.column + 1}{keys})"


def parse_yaml(text: str, *, secret: bool = False, names: Collection[str] = ()) -> object:
    """The document `text` holds; YamlError with a one-line reason otherwise. With
    `secret`, the reason quotes nothing of the document: it says where, naming
    the keys on the way that are among `names` (the format's own), any other by
    its place."""
    data = text.encode("utf-8", "surrogatepass")  # a lone surrogate: refused by the reader, as UTF-8
    if len(data) > MAX_BYTES:
        raise YamlError(f"larger than {MAX_BYTES} bytes")
    if text.count("\n") >= MAX_LINES:
        raise YamlError(f"more than {MAX_LINES:,} lines")
    loader: _Bounded | None = None
    try:
        loader = LOADER(data)  # the pure-Python reader refuses a character YAML does not allow here already
        loader.begin(quotes=not secret, names=names)
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = _where(mark, loader.where if loader is not None else None, secret)
        said = str(getattr(exc, "problem", None) or exc)
        if secret and isinstance(exc, yaml.reader.ReaderError):
            said = "a character YAML does not allow (a control character, or one outside Unicode)"
        problem = printable(_unquoted(said) if secret else said)[:200]
        kind = (
            "refused"
            if isinstance(exc, yaml.constructor.ConstructorError | yaml.composer.ComposerError)
            else "not valid YAML"
        )
        raise YamlError(f"{kind}{where}: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()


def read_capped(path: str) -> str:
    """The text of `path`, refused past MAX_BYTES before more is read; OSError and
    UnicodeDecodeError pass through for the caller to name its setting."""
    with open(path, "rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YamlError(f"larger than {MAX_BYTES} bytes")
    return data.decode("utf-8")
