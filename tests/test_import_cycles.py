"""No import circles: every module of the exporter, the registry, the dev kit,
the benchmarks and the tests can be read (and imported) after the modules it
imports. Every import statement counts, inside functions and under
TYPE_CHECKING too: a deferred import hides a circle, it does not remove it."""

from __future__ import annotations

from pathlib import Path

from devkit.imports import Circle, circles, import_graph

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("exporter", "registry", "devkit", "bench", "tests")


def test_no_import_circles() -> None:
    found = circles(import_graph(ROOT, PACKAGES))
    assert not found, "import circles:\n" + "\n".join(str(circle) for circle in found)


def test_the_check_finds_a_circle(tmp_path: Path) -> None:
    """Planted: a circle of three through a deferred and a TYPE_CHECKING import,
    a relative import, and a module outside it that imports into it."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def later() -> None:\n    from .. import c\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n")
    (package / "d.py").write_text("import pkg.a\nfrom pkg import c\n")
    found = circles(import_graph(tmp_path, ("pkg",)))
    assert found == [Circle(("pkg.a", "pkg.c", "pkg.sub.b"), ("pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"))]
    assert str(found[0]) == "3 modules (pkg.a, pkg.c, pkg.sub.b), e.g. pkg.a -> pkg.sub.b -> pkg.c -> pkg.a"


def test_a_name_imported_from_a_package_is_an_edge_to_the_package(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg.a import VALUE\n")
    (package / "a.py").write_text("from pkg import VALUE as OTHER\nVALUE = 1\n")
    assert circles(import_graph(tmp_path, ("pkg",))) == [Circle(("pkg", "pkg.a"), ("pkg", "pkg.a", "pkg"))]
