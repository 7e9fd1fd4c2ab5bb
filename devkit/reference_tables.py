"""The options and the failure reasons as markdown tables: docs/configuration.md
and docs/runbook.md show exactly these (`python -m devkit.doctables` writes
them, tests/test_readme.py keeps them equal)."""

from __future__ import annotations

from exporter.options import deprecated_spellings
from exporter.settings import OPTIONS
from exporter.tools.hints import HINTS, REDIS_HINTS


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
