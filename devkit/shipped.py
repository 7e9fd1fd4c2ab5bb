"""What the wheel ships, held to what it runs: every module of the shipped
packages reached by imports from the entry points, every name the tests, the
benchmarks and the dev kit import from them used by the shipped code itself,
and every public method of a shipped class called there (read from the source,
as devkit/imports.py reads the import graph)."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from devkit.imports import import_graph, modules


def reached(graph: Mapping[str, frozenset[str]], entries: Iterable[str]) -> set[str]:
    """The modules `entries` import, directly or not (a module's packages included: importing it runs them)."""
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:end]) for end in range(1, len(parts))]
        todo += graph[name]
    return seen


def unreached(root: Path, shipped: tuple[str, ...], entries: Iterable[str]) -> list[str]:
    """The modules of the `shipped` packages that no entry point reaches."""
    graph = import_graph(root, shipped)
    return sorted(set(graph) - reached(graph, entries))


def _trees(root: Path, packages: Iterable[str]) -> dict[str, ast.Module]:
    found: dict[str, ast.Module] = {}
    for package in packages:
        for name, path in modules(root, package).items():
            found[name] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return found


def _uses(trees: Iterable[ast.Module]) -> Counter[str]:
    """How often each name is read or imported (a definition or an assignment is no use)."""
    uses: Counter[str] = Counter()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                uses[node.id] += 1
            elif isinstance(node, ast.Attribute):
                uses[node.attr] += 1
            elif isinstance(node, ast.ImportFrom):
                uses.update(alias.name for alias in node.names)
    return uses


def used_only_outside(root: Path, shipped: tuple[str, ...], others: tuple[str, ...]) -> list[str]:
    """`module.name` for each name `others` import from the shipped packages that the shipped code never uses."""
    inside = _trees(root, shipped)
    uses = _uses(inside.values())
    found: set[str] = set()
    for tree in _trees(root, others).values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in shipped:
                for alias in node.names:
                    if f"{node.module}.{alias.name}" not in inside and not uses[alias.name]:
                        found.add(f"{node.module}.{alias.name}")
    return sorted(found)


def _defined(tree: ast.Module) -> list[str]:
    """The names a module defines at its top level: functions, classes, constants."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [target.id for target in targets if isinstance(target, ast.Name)]
    return [name for name in names if not (name.startswith("__") and name.endswith("__"))]


class _Reads(NamedTuple):
    """What one module reads of the others: names by module, modules imported whole, attributes."""

    names: dict[str, set[str]]
    modules: set[str]
    attributes: set[str]


def _reads(tree: ast.Module) -> _Reads:
    reads = _Reads({}, set(), set())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            reads.names.setdefault(node.module, set()).update(alias.name for alias in node.names)
            reads.modules.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            reads.modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Attribute):
            reads.attributes.add(node.attr)
    return reads


def _module_uses(module: str, tree: ast.Module, reads: Iterable[_Reads]) -> set[str]:
    """The names of `module` the shipped code uses: read in the module itself, imported
    by name from it, or read as an attribute of it where it is imported as a module."""
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    for other in reads:
        used |= other.names.get(module, set())
        if module in other.modules:
            used |= other.attributes
    return used


def never_used(root: Path, shipped: tuple[str, ...], scripts: Iterable[str] = ()) -> list[str]:
    """`module.name` for each top-level name of the shipped code that the shipped code
    never uses, but for the `scripts` (`module:function`, the entry points) it ships."""
    trees = _trees(root, shipped)
    reads = [_reads(tree) for tree in trees.values()]
    called = {script.replace(":", ".") for script in scripts}
    found: list[str] = []
    for module, tree in trees.items():
        used = _module_uses(module, tree, reads)
        found += [f"{module}.{name}" for name in _defined(tree) if name not in used]
    return [name for name in found if name not in called]


def methods_never_called(root: Path, shipped: tuple[str, ...]) -> list[str]:
    """`module.Class.method` for each method (or property) of a shipped class that the
    shipped code never calls; a class with a base from outside (a library's method it
    overrides) is left out."""
    trees = _trees(root, shipped)
    classes = {node.name for tree in trees.values() for node in tree.body if isinstance(node, ast.ClassDef)}
    outside_bases = {"ABC", "Generic", "NamedTuple", "Protocol", "Exception", "StrEnum", "Enum"}
    called = Counter(node.attr for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.Attribute))
    found: list[str] = []
    for module, tree in trees.items():
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {base.id if isinstance(base, ast.Name) else ast.unparse(base) for base in node.bases}
            if any(base.split("[")[0] not in classes | outside_bases for base in bases):
                continue
            methods = [item for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)]
            found += [
                f"{module}.{node.name}.{method.name}"
                for method in methods
                if not (method.name.startswith("__") and method.name.endswith("__")) and not called[method.name]
            ]
    return found
