"""The README and the pages of docs/ hold together: every relative link reaches
a file of the repository, every anchor a heading of its page (as GitHub makes
them), and every flag they mention is one the exporter's parser accepts, or
one of another tool they show."""

from __future__ import annotations

import argparse
import difflib
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from exporter.arguments import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))

# Flags of the other commands the pages show, each with the command it belongs to.
OTHER_TOOLS_FLAGS = {
    "--build": "docker compose up",
    "--loadscope-reorder": "pytest-xdist",
    "--web.enable-remote-write-receiver": "prometheus (the central server of an HA pair)",
    "--rules.alert.resend-delay": "prometheus (how often a firing alert is sent again)",
    "--cluster": "redis-cli --cluster check",
    "--build-arg": "docker build",
    "--check": "ruff format",
    "--strict": "mypy",
    "--rm": "docker run",
    "--read-only": "docker run",
    "--cap-drop": "docker run",
    "--security-opt": "docker run",
    "--find-links": "pip install",
    "--no-index": "pip install",
    "--quick": "python -m bench.run",
    "--stretch": "python -m bench.run",
    "--before": "python -m bench.run",
    "--tenants": "python -m bench.run, bench.sharded",
    "--runs": "python -m bench.run, bench.sharded",
    "--rounds": "python -m bench.redis_streams, bench.broken_tenant, bench.consumers",
    "--consumers": "python -m bench.consumers",
    "--sample": "python -m devkit.mixin_mutation",
    "--seed": "python -m devkit.mixin_mutation",
    "--kind": "python -m devkit.mixin_mutation",
    "--fast": "scripts/test",
    "--no-lint": "scripts/test",
    "--no-loadscope-reorder": "pytest (pytest-xdist)",
    "--durations": "pytest",
    "--ignore-scripts": "npm ci, npm install",
    "--package-lock-only": "npm install",
    "--majors": "python -m bench.majors",
    "--refreshes": "python -m bench.majors",
    "--no-backlog": "python -m bench.majors",
    "--framed": "python -m bench.majors",
    "--skip-extras": "python -m bench.majors",
    "--steady": "python -m bench.sharded",
    "--clusters": "python -m bench.sharded",
    "--poolers-tenants": "python -m bench.run",
    "--require-hashes": "pip install",
    "--no-deps": "pip install",
    "--no-build-isolation": "pip install",
    "--entrypoint": "docker run",
    "--upgrade": "scripts/lock",
    "--upgrade-package": "scripts/lock",
    "--universal": "uv pip compile",
    "--generate-hashes": "uv pip compile",
    "--dist": "pytest (pytest-xdist)",
    "--list": "python -m devkit.mutation",
    "--mutmut": "python -m devkit.mutation",
    "--max-children": "python -m devkit.mutation",
    "--only": "python -m devkit.mutation",
}

FENCE = re.compile(r"^(```|~~~)")
# [text](target) or [text](<target> "title"); the text may hold one level of brackets.
LINK = re.compile(
    r"!?\[(?P<text>(?:[^\[\]]|\[[^\]]*\])*)\]"
    r"\((?P<target><[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"]*\")?\)"
)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
FLAG = re.compile(r"(?<![\w/.-])--[a-z][a-z0-9]*(?:[.-][a-z0-9]+)*")


class Link(NamedTuple):
    page: Path
    line: int
    target: str

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}: {self.target}"


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def links(page: Path) -> list[Link]:
    found = []
    for number, line in _prose_lines(page.read_text(encoding="utf-8")):
        for match in LINK.finditer(CODE_SPAN.sub(_blank, line)):
            # The target read from the original line: code spans may sit in the link text only.
            found.append(Link(page, number, line[match.start("target") : match.end("target")].strip("<>")))
    return found


def _blank(match: re.Match[str]) -> str:
    """A code span kept in place (its text can be a link's text) but unable to open a link."""
    return "`" + re.sub(r"[\[\]()]", "_", match.group(2)) + "`"


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its rendered text, lower-cased, punctuation
    dropped (letters, digits, `_`, `-` and spaces kept), spaces turned into `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "").strip().lower()
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page, repeated headings numbered as GitHub does."""
    seen: dict[str, int] = {}
    result = set()
    for _, line in _prose_lines(page.read_text(encoding="utf-8")):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = github_slug(heading.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def parser_flags(parser: argparse.ArgumentParser) -> set[str]:
    """Every long option of the parser and of its commands."""
    flags: set[str] = set()
    for action in parser._actions:
        flags.update(option for option in action.option_strings if option.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                flags |= parser_flags(command)
    return flags


ALL_LINKS = [link for page in PAGES for link in links(page)]
RELATIVE = [link for link in ALL_LINKS if not re.match(r"^[a-z][a-z0-9+.-]*:", link.target)]


def test_the_pages_have_links_to_check() -> None:
    """The link reader finds what the pages hold (a reader finding nothing would pass everything)."""
    assert {page.name for page in PAGES} >= {"README.md", "configuration.md", "runbook.md"}
    assert len(RELATIVE) > 100
    assert any("#" in link.target and not link.target.startswith("#") for link in RELATIVE)
    assert any(link.target.startswith("#") for link in RELATIVE)


@pytest.mark.parametrize("link", RELATIVE, ids=Link.where)
def test_relative_link_reaches_a_file_and_an_anchor(link: Link) -> None:
    path, _, fragment = link.target.partition("#")
    target = (link.page.parent / path).resolve() if path else link.page
    assert target.is_relative_to(ROOT), f"{link.where()} leaves the repository"
    assert target.exists(), f"{link.where()}: no such file"
    if fragment:
        assert target.suffix == ".md", f"{link.where()}: an anchor into a file that is not markdown"
        known = anchors(target)
        close = difflib.get_close_matches(fragment, known)
        assert fragment in known, f"{link.where()}: no heading with the anchor #{fragment} (close: {close})"


def test_slugs_follow_github() -> None:
    """Headings the pages use, with the anchors GitHub gives them."""
    assert github_slug("PgBouncer and other poolers") == "pgbouncer-and-other-poolers"
    assert github_slug("Thanos, Mimir, federation") == "thanos-mimir-federation"
    assert (
        github_slug("Connection paths to the database (full run: `python -m bench.run --before e35bd72`)")
        == "connection-paths-to-the-database-full-run-python--m-benchrun---before-e35bd72"
    )
    assert github_slug("How the exporter reads 10,000 schemas (exporter/sources/postgres/source.py)") == (
        "how-the-exporter-reads-10000-schemas-exportersourcespostgressourcepy"
    )
    assert github_slug("A true 0 and a failure") == "a-true-0-and-a-failure"


def test_repeated_headings_are_numbered(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n## How to check\n```sh\n# not a heading\n```\n## How to check\n## How to check\n")
    assert anchors(page) == {"title", "how-to-check", "how-to-check-1", "how-to-check-2"}


def test_the_link_reader_sees_links_beside_code(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "[`a.md`](a.md) and `[not](a link)`, [b](b.md#x) ([c](c.md)).\n```\n[in](code.md)\n```\n[d](https://e.org)\n"
    )
    assert [link.target for link in links(page)] == ["a.md", "b.md#x", "c.md", "https://e.org"]


def mentioned_flags() -> dict[str, list[str]]:
    """Every `--flag` of the pages, with where it appears; link targets are not text."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            for flag in FLAG.findall(re.sub(r"\]\([^)]*\)", "]", line)):
                found.setdefault(flag, []).append(f"{page.relative_to(ROOT)}:{number}")
    return found


def test_every_flag_mentioned_exists() -> None:
    exporter_flags = parser_flags(build_parser())
    assert {"--web.listen-address", "--database.url", "--version"} <= exporter_flags
    unknown = {
        flag: places
        for flag, places in mentioned_flags().items()
        if flag not in exporter_flags and flag not in OTHER_TOOLS_FLAGS
    }
    assert not unknown, f"flags the exporter does not have: {unknown}"


def test_the_flag_reader_finds_flags_and_nothing_else() -> None:
    text = "`--web.config.file`, python--m, `--`, a ---before slug, --database.pool-mode transaction, -d5s, --ttl."
    assert FLAG.findall(text) == ["--web.config.file", "--database.pool-mode", "--ttl"]
