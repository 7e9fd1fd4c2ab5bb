"""The wheel ships only the exporter: every module of exporter/ and registry/ is
reached from the command line's entry points, nothing the tests, benchmarks or
dev kit import from them is there for them alone, and every function, class,
constant and method shipped is used by the shipped code (devkit/shipped.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from devkit.shipped import methods_never_called, never_used, unreached, used_only_outside

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("exporter", "registry")
OTHERS = ("tests", "bench", "devkit")
# Read-only views of the running exporter, kept for the tests and the benchmarks to
# count and steer measurements; nothing else reaches into a cache from outside.
INTROSPECTION = {"exporter.exporter.Exporter.caches", "exporter.cache.SignalCache.measurements"}


def scripts() -> list[str]:
    """The console scripts the wheel installs, as `module:function`."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"].values())


def entry_points() -> list[str]:
    return [script.split(":")[0] for script in scripts()] + ["exporter.__main__"]


def test_every_shipped_module_is_reached_from_an_entry_point() -> None:
    assert entry_points()[0] == "exporter.cli"
    assert unreached(ROOT, SHIPPED, entry_points()) == []


def test_nothing_shipped_is_imported_only_by_the_tests_benchmarks_or_dev_kit() -> None:
    assert used_only_outside(ROOT, SHIPPED, OTHERS) == []


def test_every_function_class_and_constant_shipped_is_used_by_the_exporter() -> None:
    assert never_used(ROOT, SHIPPED, scripts()) == []


def test_every_method_of_a_shipped_class_is_called_by_the_exporter() -> None:
    assert set(methods_never_called(ROOT, SHIPPED)) == INTROSPECTION


def test_the_checks_find_what_only_the_tests_use(tmp_path: Path) -> None:
    """Planted: a module no entry point imports, a function and a method only a test uses,
    a dead constant and a dead private method."""
    (tmp_path / "app").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "cli.py").write_text(
        "from app.core import Thing, run\n\ndef main() -> None:\n    run(Thing().go())\n"
    )
    (tmp_path / "app" / "core.py").write_text(
        "DEAD = 4\nLIVE = 5\n\n"
        "class Thing:\n    def go(self) -> int:\n        return LIVE\n\n"
        "    def peek(self) -> int:\n        return 2\n\n"
        "    def _gone(self) -> int:\n        return 6\n\n"
        "def run(value: int) -> None:\n    print(value)\n\n"
        "def helper() -> int:\n    return 3\n"
    )
    (tmp_path / "app" / "scaffold.py").write_text("VALUE = 1\n")
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "test_app.py").write_text(
        "from app.core import Thing, helper, run\nfrom app.scaffold import VALUE\n"
    )
    assert unreached(tmp_path, ("app",), ["app.cli"]) == ["app.scaffold"]
    assert used_only_outside(tmp_path, ("app",), ("tests",)) == ["app.core.helper", "app.scaffold.VALUE"]
    assert never_used(tmp_path, ("app",), ["app.cli:main"]) == [
        "app.core.DEAD",
        "app.core.helper",
        "app.scaffold.VALUE",
    ]
    assert methods_never_called(tmp_path, ("app",)) == ["app.core.Thing.peek", "app.core.Thing._gone"]
