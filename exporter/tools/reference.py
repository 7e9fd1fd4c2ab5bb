"""The registry, the options and the failure reasons as markdown tables: the
README and docs/ show exactly these (`python -m devkit.doctables` writes them,
a test keeps them equal), and `orpycamcp-exporter metrics` prints the registry."""

from __future__ import annotations

from collections.abc import Mapping

from exporter.flags import deprecated_spellings
from exporter.settings import OPTIONS
from exporter.tools.hints import HINTS, REDIS_HINTS
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


def options_table() -> str:
    """Every option as declared (docs/configuration.md shows it): the environment
    variable of the rule first, then the other names also read; a flag's deprecated
    spellings under it."""
    rows = ["| flag | environment | default | accepts | meaning |", "|---|---|---|---|---|"]
    for option in OPTIONS:
        default = f"`{option.default}`" if option.default is not None else option.default_doc or "–"
        env = f"`{option.env}`" + "".join(f"<br>also `{alias}`" for alias in option.aliases)
        formerly = "".join(f"<br>formerly `{old}` (deprecated)" for old in deprecated_spellings(option.name))
        rows.append(f"| `{option.flag}`{formerly} | {env} | {default} | {option.parse.kind} | {option.help} |")
    return "\n".join(rows) + "\n"


def reasons_table() -> str:
    """Every reason a signal can be unmeasured for, and what to do (docs/runbook.md shows it)."""
    rows = ["| reason (`reason` in the log) | what to do |", "|---|---|"]
    for reason, text in HINTS.items():
        redis_text = f"<br>{REDIS_HINTS[reason]}" if reason in REDIS_HINTS else ""
        rows.append(f"| `{reason}` | {text}{redis_text} |")
    return "\n".join(rows) + "\n"
