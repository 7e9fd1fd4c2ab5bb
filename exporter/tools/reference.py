"""The registry as a markdown table: `orpycamcp-exporter metrics` prints it, and
the README shows exactly it (`python -m devkit.doctables` writes it, a test
keeps them equal; the options and reasons tables: devkit/reference_tables.py)."""

from __future__ import annotations

from collections.abc import Mapping

from registry import BUILTIN, Registry


def _values(values: frozenset[str] | tuple[str, ...]) -> str:
    return ", ".join(f"`{value}`" for value in values)


def metrics_table(registry: Registry = BUILTIN, descriptions: Mapping[str, str] | None = None) -> str:
    """The registry's families; `descriptions` (per signal, e.g. a declared
    backlog's help) follow the help of that signal's families."""
    described = descriptions or {}
    rows = ["| family | type | signal | labels and their closed values | help |", "|---|---|---|---|---|"]
    for family in registry.families:
        if not family.labels:
            labels = "–"
        elif family.rule is not None:
            labels = f"`{family.labels[0]}`: {family.rule.description}"
        elif len(family.labels) > 1 and len(family.combinations) != _product_size(family.combinations):
            labels = (
                "("
                + ", ".join(family.labels)
                + ") ∈ "
                + "; ".join("(" + ", ".join(f"`{v}`" for v in combination) + ")" for combination in family.combinations)
            )
        else:
            labels = "<br>".join(
                f"`{label}` ∈ {_values(tuple(dict.fromkeys(c[i] for c in family.combinations)))}"
                for i, label in enumerate(family.labels)
            )
        text = family.help
        if family.signal in described:
            text += f" `{family.signal}`: {described[family.signal]}"
        rows.append(f"| `{family.name}` | {family.type.value} | {family.signal} | {labels} | {text} |")
    return "\n".join(rows) + "\n"


def _product_size(combinations: tuple[tuple[str, ...], ...]) -> int:
    size = 1
    for index in range(len(combinations[0])):
        size *= len({combination[index] for combination in combinations})
    return size
