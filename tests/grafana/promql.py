"""Just enough PromQL lexing to find the vector selectors of an expression.

Validity itself is left to promtool; this only needs to find every metric name
and the label matchers attached to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KEYWORDS = frozenset(
    {
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "nan",
        "inf",
        "atan2",
        "start",
        "end",
    }
)
# Aggregation operators may be followed by `by (...)` / `without (...)` instead of `(`.
AGGREGATIONS = frozenset(
    {
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    }
)
LABEL_LIST_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
NUMBER = re.compile(r"[0-9.][0-9a-zA-Z.]*")
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


class PromQLSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str


@dataclass(frozen=True)
class Selector:
    metric: str | None
    matchers: tuple[Matcher, ...]

    def has(self, label: str, op: str, value: str) -> bool:
        return Matcher(label, op, value) in self.matchers


def _skip_string(expr: str, start: int) -> int:
    quote = expr[start]
    index = start + 1
    while index < len(expr):
        if expr[index] == "\\" and quote != "`":
            index += 2
            continue
        if expr[index] == quote:
            return index + 1
        index += 1
    raise PromQLSyntaxError(f"unterminated string in {expr!r}")


def _closing(expr: str, start: int, opening: str, closing: str) -> int:
    """Index just past the bracket that closes expr[start] (strings skipped)."""
    depth = 0
    index = start
    while index < len(expr):
        char = expr[index]
        if char in "\"'`":
            index = _skip_string(expr, index)
            continue
        if char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise PromQLSyntaxError(f"unbalanced {opening}{closing} in {expr!r}")


def _matchers(body: str) -> tuple[Matcher, ...]:
    found: list[Matcher] = []
    position = 0
    body = body.strip()
    while position < len(body):
        match = MATCHER.match(body, position)
        if match is None:
            raise PromQLSyntaxError(f"cannot read label matchers {body!r}")
        found.append(Matcher(match.group(1), match.group(2), match.group(3)))
        position = match.end()
    return tuple(found)


def _next_char(expr: str, index: int) -> tuple[int, str]:
    while index < len(expr) and expr[index].isspace():
        index += 1
    return index, expr[index] if index < len(expr) else ""


def selectors(expr: str) -> list[Selector]:
    """Every vector selector of `expr`, in order."""
    found: list[Selector] = []
    index = 0
    while index < len(expr):
        char = expr[index]
        if char.isspace():
            index += 1
        elif char in "\"'`":
            index = _skip_string(expr, index)
        elif char == "#":
            newline = expr.find("\n", index)
            index = len(expr) if newline < 0 else newline
        elif char == "[":
            index = _closing(expr, index, "[", "]")
        elif char == "{":
            end = _closing(expr, index, "{", "}")
            found.append(Selector(None, _matchers(expr[index + 1 : end - 1])))
            index = end
        elif NUMBER.match(expr, index) and not IDENTIFIER.match(expr, index):
            number = NUMBER.match(expr, index)
            assert number is not None
            index = number.end()
        elif (identifier := IDENTIFIER.match(expr, index)) is not None:
            name = identifier.group(0)
            after, following = _next_char(expr, identifier.end())
            if name.lower() in LABEL_LIST_KEYWORDS:
                index = _closing(expr, after, "(", ")") if following == "(" else after
            elif name.lower() in KEYWORDS | AGGREGATIONS or following == "(":
                index = identifier.end()
            elif following == "{":
                end = _closing(expr, after, "{", "}")
                found.append(Selector(name, _matchers(expr[after + 1 : end - 1])))
                index = end
            else:
                found.append(Selector(name, ()))
                index = identifier.end()
        else:
            index += 1
    return found


def metric_names(expr: str) -> set[str]:
    """Metric names selected by `expr` (a `{__name__=...}` selector is rejected)."""
    names: set[str] = set()
    for selector in selectors(expr):
        if selector.metric is None:
            raise PromQLSyntaxError(f"selector without a metric name in {expr!r}")
        names.add(selector.metric)
    return names
