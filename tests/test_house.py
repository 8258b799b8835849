"""The house rules that the import contracts (`lint-imports`, in `make lint`) cannot express: a
module small enough to read in one sitting, a function small enough to see whole, and screens that
read the ledger through `ledger/readers.py` instead of opening SQLite themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import parse_sources

import svc_console

PACKAGE = Path(svc_console.__file__).parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_rules_see_every_module():
    # A glob that matched nothing would make every rule below pass.
    assert len(_modules()) > 100


def test_no_module_is_over_500_lines():
    long = {
        _name(p): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_is_over_80_lines():
    long = {}
    for path, tree in parse_sources(_modules()):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{_name(path)}:{node.lineno} {node.name}"] = lines
    assert long == {}


@pytest.mark.parametrize("module", ["sqlite3", "sqlite_utils"])
def test_no_screen_or_widget_opens_the_ledger_itself(module):
    tui = PACKAGE / "tui"
    offenders = [
        _name(p)
        for p, tree in parse_sources(sorted(tui.rglob("*.py")))
        if any(name == module or name.startswith(f"{module}.") for name in _imports(tree))
    ]
    assert offenders == []


def _declared() -> set[str]:
    """The distributions pyproject.toml names as the package's own dependencies."""
    import re
    import tomllib

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    names = {re.match(r"[A-Za-z0-9._-]+", spec).group(0) for spec in project["dependencies"]}
    return {name.lower().replace("_", "-") for name in names}


def test_every_package_the_code_imports_is_declared():
    # A package that arrives only as another's dependency can vanish with that one's next release.
    import importlib.metadata
    import sys

    providers = importlib.metadata.packages_distributions()
    imported = {
        name.split(".")[0] for _, tree in parse_sources(_modules()) for name in _imports(tree)
    }
    third_party = imported - set(sys.stdlib_module_names) - {"svc_console"}
    undeclared = {
        top: providers.get(top)
        for top in sorted(third_party)
        if not {d.lower().replace("_", "-") for d in providers.get(top, [top])} & _declared()
    }
    assert len(third_party) > 10
    assert undeclared == {}
