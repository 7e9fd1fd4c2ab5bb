"""Mutation testing of the monitoring mixin's rules, alerts and Alertmanager example
(mixin/*.libsonnet, not the dashboard), against the promtool tests of each render
(devkit/mixin_variants.py) and the checks of the Alertmanager render.

    python -m devkit.mixin_mutation --list                 # the mutants, by kind
    nice -n 5 python -m devkit.mixin_mutation --sample 60  # every config mutant, 60 others drawn

mixin/ is copied to a temporary directory and mutated there, one mutant at a
time. Each mutant is rendered for every variant (default, renamed, other); a
mutant that renders no rule differently from the unmutated mixin under any
variant is `unchanged` (equivalent: the files users load are the same); one the
mixin refuses to render (its own asserts) is killed by the render. Otherwise the
test files of each variant that name a rule it changed (or a rule reading a
changed record, transitively) run in one promtool run per variant: the mutant is
killed when one fails, survives when all pass. A mutant that changes a render's
Alertmanager configuration is judged by tests/alerts/test_alertmanager.py (its
routes and inhibitions, on the default render). `text` marks a mutant that
changed only annotations (the words of an alert, not when it fires).

Kinds: `config` (every reference to one `_config` key replaced by its default
value: killed only by a variant that sets the key), `compare` (a comparison
made strict or loose, == and != swapped), `setop` (and/unless swapped, or made
and), `aggregate` (max and min swapped, topk and bottomk), `grouping` (one label
dropped from a by/without/on/ignoring list), `number` (an integer plus one),
`duration` (a duration's count plus one); in alertmanager.libsonnet only,
`matcher` (a label matcher's `=`/`!=` or `=~`/`!~` swapped), `alternative` (one
alternative dropped from a regex matcher), `item` (one item dropped from a list:
a matcher, a label of `equal` or `group_by`), `operand` (the selector's
matchers, `+ own`, or its labels, `keys +`, dropped from a list).

Not mutmut (devkit/mutation.py): mutmut mutates Python functions, and a
mutant here is judged by promtool on a render, not by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devkit import mixin
from devkit.mixin_variants import Variant, promtool_on, variants

ALERTMANAGER = "alertmanager.libsonnet"
MUTATED = ("lib.libsonnet", "rules.libsonnet", "alerts.libsonnet", ALERTMANAGER, "config.libsonnet")
COMMENT = re.compile(r"^\s*//")
COMPARISONS = {">": ">=", ">=": ">", "<": "<=", "<=": "<", "==": "!=", "!=": "=="}
PATTERNS: dict[str, tuple[re.Pattern[str], Any]] = {
    "compare": (re.compile(r"(?<= )(>=|<=|==|!=|>|<)(?= )"), lambda m: COMPARISONS[m.group(1)]),
    # PromQL's set operators, where an operand follows (not the words of a text).
    "setop": (
        re.compile(r"\b(and|unless|or)(?= (?:on|ignoring) \(| %\(| \(| [a-z_:]+[{(\[]|\n)"),
        lambda m: {"and": "unless", "unless": "and", "or": "and"}[m.group(1)],
    ),
    "aggregate": (
        re.compile(r"\b(max|min|topk|bottomk)(?= by| without| \(|\()"),
        lambda m: {"max": "min", "min": "max", "topk": "bottomk", "bottomk": "topk"}[m.group(1)],
    ),
    "number": (re.compile(r"(?<![\w.%/'\"-])(\d+)(?![\w.'\"/])"), lambda m: str(int(m.group(1)) + 1)),
    "duration": (re.compile(r"(?<=')(\d+)(?=[smhdw]')"), lambda m: str(int(m.group(1)) + 1)),
}
SURVIVED = re.compile(r"^survived: (.+)$", re.MULTILINE)
GROUPING = re.compile(r"\b(by|without|on|ignoring) \(([^()]+)\)")
CONFIG_REFERENCE = r"\b(?:c|config|_config|\$\._config)\.{key}\b"
# alertmanager.libsonnet: the operator of a matcher in a string ('severity="critical"'),
# a regex matcher's value, a one-line list (not a comprehension), the selector's parts.
MATCHER_OPERATOR = re.compile(r"(?<=[a-z_])(=~|!~|!=|=)(?=\")")
MATCHER_OPERATORS = {"=": "!=", "!=": "=", "=~": "!~", "!~": "=~"}
REGEX_VALUE = re.compile(r"(?<=~\")([^\"]+)(?=\")")
ONE_LINE_LIST = re.compile(r"\[([^\[\]{}\n]+)\]")
OPERAND = re.compile(r" \+ own\b|\bkeys \+ ")


@dataclass(frozen=True)
class Mutant:
    kind: str
    file: str
    start: int  # the replaced text's offsets in the unmutated file
    end: int
    line: int
    before: str
    after: str
    key: str | None = None  # the `_config` key of a config mutant

    @property
    def name(self) -> str:
        where = f"{self.file}:{self.line}" if self.key is None else self.key
        return f"{self.kind} {where} {self.before!r} -> {self.after!r}"


def _in_comment(text: str, position: int) -> bool:
    start = text.rfind("\n", 0, position) + 1
    return "//" in text[start:position]


def mutants(directory: Path, defaults: Mapping[str, Any]) -> Iterator[Mutant]:
    """Every mutant of the mixin in `directory`, in file and position order, then one per `_config` key read."""
    for file in MUTATED:
        text = (directory / file).read_text(encoding="utf-8")
        edits: list[tuple[str, int, int, str]] = []
        if file == ALERTMANAGER:
            edits = _alertmanager_edits(text)
        for kind, (pattern, replace) in PATTERNS.items() if file != ALERTMANAGER else ():
            if (kind == "duration") == (file == "config.libsonnet"):
                edits += [(kind, m.start(1), m.end(1), replace(m)) for m in pattern.finditer(text)]
        if file not in ("config.libsonnet", ALERTMANAGER):
            for match in GROUPING.finditer(text):
                labels = [label.strip() for label in match.group(2).split(",")]
                if "%s" in labels:
                    continue  # positional: dropping one breaks the format, not the rule
                for dropped in range(len(labels) if len(labels) > 1 else 0):
                    kept = ", ".join(label for i, label in enumerate(labels) if i != dropped)
                    edits.append(("grouping", match.start(2), match.end(2), kept))
        for kind, start, end, after in sorted(edits, key=lambda edit: edit[1]):
            if not _in_comment(text, start):
                yield Mutant(kind, file, start, end, text.count("\n", 0, start) + 1, text[start:end], after)
    for key, default in defaults.items():
        pattern = re.compile(CONFIG_REFERENCE.format(key=re.escape(key)))
        if any(pattern.search((directory / file).read_text(encoding="utf-8")) for file in MUTATED[:-1]):
            yield Mutant("config", "*", 0, 0, 0, f"c.{key}", json.dumps(default), key)


def _alertmanager_edits(text: str) -> list[tuple[str, int, int, str]]:
    """The matchers, lists and selector parts of alertmanager.libsonnet, each changed once."""
    edits = [("matcher", m.start(), m.end(), MATCHER_OPERATORS[m.group()]) for m in MATCHER_OPERATOR.finditer(text)]
    for match in REGEX_VALUE.finditer(text):
        alternatives = match.group().split("|")
        for dropped in range(len(alternatives) if len(alternatives) > 1 else 0):
            kept = "|".join(a for i, a in enumerate(alternatives) if i != dropped)
            edits.append(("alternative", match.start(), match.end(), kept))
    for match in ONE_LINE_LIST.finditer(text):
        if " for " in match.group(1):
            continue  # a comprehension, not a list of items
        items = [item.strip() for item in match.group(1).split(",")]
        for dropped in range(len(items)):
            kept = ", ".join(item for i, item in enumerate(items) if i != dropped)
            edits.append(("item", match.start(1), match.end(1), kept))
    edits += [("operand", m.start(), m.end(), "") for m in OPERAND.finditer(text)]
    return edits


def apply(directory: Path, mutant: Mutant, originals: Mapping[str, str]) -> None:
    """Writes the mutant into `directory`, every other file as it was."""
    for file, text in originals.items():
        if mutant.key is not None and file != "config.libsonnet":
            pattern = re.compile(CONFIG_REFERENCE.format(key=re.escape(mutant.key)))
            text = pattern.sub(lambda _: mutant.after, text)
        elif file == mutant.file:
            text = text[: mutant.start] + mutant.after + text[mutant.end :]
        (directory / file).write_text(text, encoding="utf-8")


def by_name(rendering: mixin.Rendering) -> dict[str, str]:
    """Each rule of a render, by its alert or record name (a record's several rules joined)."""
    rules: dict[str, list[str]] = {}
    for group in mixin.rule_groups(rendering):
        for rule in group["rules"]:
            rules.setdefault(mixin.rule_name(rule), []).append(json.dumps(rule, sort_keys=True))
    return {name: "\n".join(texts) for name, texts in rules.items()}


def affected(before: Mapping[str, str], rendering: mixin.Rendering) -> tuple[set[str], bool]:
    """The rules of `rendering` changed from `before` (`by_name` of another render), with
    every rule reading one (transitively); and whether it changed only annotations."""
    after = by_name(rendering)
    changed = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
    only_text = all(
        name in before and name in after and _without_annotations(before[name]) == _without_annotations(after[name])
        for name in changed
    )
    return mixin.reached(changed, mixin.readers(mixin.reads(rendering))), only_text


def _without_annotations(text: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k != "annotations"} for line in text.splitlines()]


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    verdict: str  # killed, refused (killed by the render), survived, unchanged
    detail: str = ""
    text_only: bool = False


@dataclass(frozen=True)
class Baseline:
    """One variant's render of the unmutated mixin: its rules by name, its Alertmanager configuration."""

    rules: dict[str, str]
    alertmanager: dict[str, Any]


def baseline(variant: Variant, work: Path) -> Baseline:
    return Baseline(
        by_name(mixin.evaluate_rules(variant.config, work)), mixin.evaluate_alertmanager(variant.config, work)
    )


def judge(
    mutant: Mutant,
    work: Path,
    originals: Mapping[str, str],
    baselines: Mapping[str, Baseline],
    checks_only: bool = False,
) -> Outcome:
    """Renders the mutant for each variant and runs the test files that name what it changed
    (`checks_only`: the render checks alone, for the survivors of an earlier run)."""
    apply(work, mutant, originals)
    if checks_only:
        failure = _render_check_failure(work)
        return Outcome(mutant, "killed" if failure else "survived", f"render checks: {failure}" if failure else "")
    changed = False
    text_only = True
    if mutant.key is not None and not any(mutant.key in variant.config for variant in variants()):
        failure = _render_check_failure(work)
        return Outcome(mutant, "killed" if failure else "survived", f"no promtool render sets it; {failure}")
    # alertmanager.libsonnet is read by the Alertmanager render alone: no rule to render.
    rendered = variants() if mutant.file != ALERTMANAGER else ()
    for variant in sorted(rendered, key=lambda variant: len(variant.tests)):  # the fewest files first
        if mutant.key is not None and mutant.key not in variant.config:
            continue  # the key at its default: this render is the unmutated one
        try:
            rendering = mixin.evaluate_rules(variant.config, work)
        except mixin.MixinError as error:
            return Outcome(mutant, "refused", error.detail)
        names, only_text = affected(baselines[variant.name].rules, rendering)
        if not names:
            continue
        changed = True
        text_only = text_only and only_text
        # The files naming most of what changed first, one promtool run each: the first failure ends it.
        named = {path: sum(name in path.read_text(encoding="utf-8") for name in names) for path in variant.tests}
        for path in sorted((path for path, count in named.items() if count), key=lambda path: -named[path]):
            if failure := _promtool_failure(rendering, [path], variant):
                return Outcome(mutant, "killed", f"{variant.name} {path.name}: {failure}", text_only)
    try:
        routing = [
            variant.name
            for variant in variants()
            if mixin.evaluate_alertmanager(variant.config, work) != baselines[variant.name].alertmanager
        ]
    except mixin.MixinError as error:
        return Outcome(mutant, "refused", error.detail)
    checks = (RENDER_CHECKS if rendered else ()) + (ALERTMANAGER_CHECKS if routing else ())
    if failure := _render_check_failure(work, checks):  # unchanged rules too: an assert, the dashboard
        return Outcome(mutant, "killed", f"render checks: {failure}", changed and text_only and not routing)
    changed = changed or bool(routing)
    text_only = changed and text_only and not routing
    detail = f"the Alertmanager configuration of {', '.join(routing)} changed" if routing else ""
    return Outcome(mutant, "survived" if changed else "unchanged", detail, text_only)


# The tests that check renders in process (every _config key reaches its alerts, the
# windows derived from the cadences), run on a mutant promtool let through.
RENDER_CHECKS = (
    "tests/alerts/test_config_keys.py",
    "tests/alerts/test_windows.py",
    "tests/alerts/test_mixin.py::test_config_override_reaches_every_selector",
)


# The routes and inhibitions of the Alertmanager render, run when a mutant changed it.
ALERTMANAGER_CHECKS = ("tests/alerts/test_alertmanager.py",)


def _render_check_failure(work: Path, checks: tuple[str, ...] = RENDER_CHECKS) -> str:
    """The first of `checks` failing on the mixin in `work`, or ""."""
    if not checks:
        return ""  # pytest would run every test it finds
    # Not the slow tier's promtool runs in those files (each key's own render): seconds, not minutes, a mutant.
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", "-x", "-m", "not slow"]
    command += checks
    environment = {**os.environ, mixin.MIXIN_DIR_VARIABLE: str(work)}
    result = subprocess.run(
        command, cwd=mixin.REPO_ROOT, env=environment, capture_output=True, text=True, timeout=900, check=False
    )
    if result.returncode == 0:
        return ""
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    return (failed[0] if failed else result.stdout.strip().splitlines()[-1])[:160]


def _promtool_failure(rendering: mixin.Rendering, tests: list[Path], variant: Variant) -> str:
    """What promtool reports failing, or "" when every test passes."""
    with tempfile.TemporaryDirectory(prefix="mixin-mutant-") as directory:
        result = promtool_on(mixin.rules_yaml(rendering), tests, Path(directory), variant.transform)
    if result.returncode == 0:
        return ""
    output = result.stdout + result.stderr
    named = [line.strip() for line in output.splitlines() if "alertname:" in line or "expr:" in line]
    return (named[0] if named else output.strip().splitlines()[-1])[:160]


def drawn(every: list[Mutant], sample: int | None, seed: int) -> list[Mutant]:
    """Every config mutant, and `sample` of the others drawn at random (seeded), in their order."""
    config = [m for m in every if m.kind == "config"]
    others = [m for m in every if m.kind != "config"]
    if sample is not None and sample < len(others):
        others = sorted(random.Random(seed).sample(others, sample), key=every.index)
    return others + config


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devkit.mixin_mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the mutants and stop")
    parser.add_argument("--sample", type=int, help="how many of the non-config mutants to run (default: all)")
    parser.add_argument("--seed", type=int, default=39, help="the draw's seed")
    parser.add_argument("--kind", action="append", default=[], help="only mutants of this kind (repeatable)")
    parser.add_argument("--match", default="", help="only mutants whose name contains this")
    parser.add_argument(
        "--again", type=Path, metavar="LOG", help="only the mutants an earlier run's output lists as survived"
    )
    parser.add_argument("--from", dest="start", type=int, default=1, metavar="N", help="from the N-th mutant drawn")
    parser.add_argument("--part", default="1/1", metavar="K/N", help="the K-th of N interleaved shares of the mutants")
    parser.add_argument("--checks-only", action="store_true", help="with --again: the render checks alone")
    args = parser.parse_args(argv)
    again = set() if args.again is None else set(SURVIVED.findall(args.again.read_text(encoding="utf-8")))
    defaults = mixin.default_config()

    def wanted(m: Mutant) -> bool:
        return (not args.kind or m.kind in args.kind) and args.match in m.name and (not again or m.name in again)

    every = [m for m in mutants(mixin.MIXIN_DIR, defaults) if wanted(m)]
    counts = {kind: sum(m.kind == kind for m in every) for kind in dict.fromkeys(m.kind for m in every)}
    print(f"{len(every)} mutants: " + ", ".join(f"{n} {kind}" for kind, n in counts.items()), flush=True)
    part, parts = (int(number) for number in args.part.split("/"))
    chosen = drawn(every, args.sample, args.seed)[args.start - 1 :][part - 1 :: parts]
    if args.list:
        print("\n".join(m.name for m in chosen))
        return 0
    with tempfile.TemporaryDirectory(prefix="mixin-mutation-") as temporary:
        work = Path(temporary) / "mixin"
        shutil.copytree(mixin.MIXIN_DIR, work)
        originals = {file: (work / file).read_text(encoding="utf-8") for file in MUTATED}
        baselines = {variant.name: baseline(variant, work) for variant in variants()}
        outcomes = []
        for number, mutant in enumerate(chosen, 1):
            outcome = judge(mutant, work, originals, baselines, args.checks_only)
            outcomes.append(outcome)
            text = " (annotations only)" if outcome.text_only else ""
            print(f"[{number}/{len(chosen)}] {outcome.verdict}{text}: {mutant.name} {outcome.detail}", flush=True)
    print(summary(outcomes))
    return 0


def summary(outcomes: list[Outcome]) -> str:
    """Killed / non-equivalent (unchanged renders are equivalent), per kind."""
    lines = []
    for kind in [*dict.fromkeys(o.mutant.kind for o in outcomes), "all"]:
        mine = [o for o in outcomes if kind in ("all", o.mutant.kind)]
        killed = sum(o.verdict in ("killed", "refused") for o in mine)
        survived = [o for o in mine if o.verdict == "survived"]
        unchanged = sum(o.verdict == "unchanged" for o in mine)
        lines.append(f"{kind}: {killed}/{killed + len(survived)} killed, {unchanged} unchanged renders")
    lines += [f"survived: {o.mutant.name}" for o in outcomes if o.verdict == "survived"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
