"""The import graph of a package, read from its source (every import statement:
at module level, inside functions, under TYPE_CHECKING), and its circles."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

Graph = Mapping[str, frozenset[str]]


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` (a folder under `root`) by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imported(tree: ast.AST, name: str, is_package: bool, known: Mapping[str, Path]) -> Iterator[str]:
    """The modules of `known` that `tree` (the module `name`) imports: `from a import b`
    is an import of a.b when that is a module, else of a."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here[: len(here) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Module -> the modules of `packages` it imports."""
    known: dict[str, Path] = {}
    for package in packages:
        known.update(modules(root, package))
    graph: dict[str, frozenset[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets = set(_imported(tree, name, path.name == "__init__.py", known)) & set(known)
        graph[name] = frozenset(targets - {name})
    return graph


class Circle(NamedTuple):
    """Modules that import each other, directly or not, and one cycle among them."""

    modules: tuple[str, ...]
    cycle: tuple[str, ...]  # from the first module back to it

    def __str__(self) -> str:
        return f"{len(self.modules)} modules ({', '.join(self.modules)}), e.g. {' -> '.join(self.cycle)}"


def circles(graph: Graph) -> list[Circle]:
    """Each strongly connected part of more than one module, with a shortest cycle
    through its first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[set[str]] = []

    def visit(start: str) -> None:
        # Tarjan's algorithm, iterative: the graphs are small, the recursion limit is not.
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.add(member)
                    if member == node:
                        break
                if len(part) > 1:
                    parts.append(part)

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(Circle(tuple(sorted(part)), _cycle_through(graph, part)) for part in parts)


def _cycle_through(graph: Graph, part: set[str]) -> tuple[str, ...]:
    """A shortest cycle from the first module of `part` back to it, within `part`."""
    start = min(part)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(graph[node] & part):
                if child == start:
                    return (*paths[node], start)
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a strongly connected part always has one


def main() -> None:
    root = Path(__file__).resolve().parents[1]
    for package in ("exporter", "bench", "registry", "devkit"):
        graph = import_graph(root, (package,))
        found = circles(graph)
        print(f"{package}: {len(found)} circle(s)")
        for circle in found:
            print(f"  {circle}")


if __name__ == "__main__":
    main()
