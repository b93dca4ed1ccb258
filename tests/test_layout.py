"""The shape of the source tree: modules and functions a person can read at once, thin packages.

Layering (what may import what) is import-linter's job (pyproject.toml, run by scripts/test);
this checks what it cannot: size ceilings and package surfaces (docs/architecture.md).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "meworkd").rglob("*.py"), *(ROOT / "clients").rglob("*.py")])
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_tree_is_found() -> None:
    assert len(SOURCES) > 40


@pytest.mark.parametrize("path", SOURCES, ids=relative)
def test_a_module_fits_on_a_few_screens(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{relative(path)} has {lines} lines"


@pytest.mark.parametrize("path", SOURCES, ids=relative)
def test_a_function_fits_on_a_screen(path: Path) -> None:
    tree = ast.parse(path.read_text())
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines, line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == [], f"{relative(path)}: {long}"


@pytest.mark.parametrize("path", SOURCES, ids=relative)
def test_a_module_says_its_job_first(path: Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text()))
    assert docstring, f"{relative(path)} has no opening docstring"


INITS = [p for p in SOURCES if p.name == "__init__.py"]


@pytest.mark.parametrize("path", INITS, ids=relative)
def test_a_package_init_is_only_its_surface(path: Path) -> None:
    """Imports, ``__all__`` and ``__version__``: code lives in modules, so imports stay cheap."""
    body = ast.parse(path.read_text()).body
    for node in body[1:] if ast.get_docstring(ast.parse(path.read_text())) else body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if names <= {"__all__", "__version__"}:
                continue
        raise AssertionError(f"{relative(path)}:{node.lineno}: only imports and __all__ here")
