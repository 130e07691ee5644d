"""The package shows its flow: each stage imports only from stages below it, and no module imports itself
back through others. Read from the source with `ast`, so a new module is checked the day it is added."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "triage"

# Stages from the bottom up. A module may import from its own stage and the ones before it.
STAGES: list[tuple[str, ...]] = [
    ("triage", "triage.lazyre", "triage.model", "triage.redact", "triage.template", "triage.prefixes", "triage.errors",
     "triage.library.cache", "triage.safe_load", "triage.fastbytes"),
    ("triage.library",),
    ("triage.parsers",),  # line and file parsers; discover sniffs a file's kind with them
    ("triage.input",),
    ("triage.scan",),
    ("triage.checks", "triage.effective_config", "triage.findings", "triage.budget"),
    ("triage.report",),
    ("triage.analyze", "triage.rulecheck", "triage.cluster"),
    ("triage.cli", "triage.__main__"),
]


def stage_of(module: str) -> int:
    best, best_len = -1, -1
    for i, prefixes in enumerate(STAGES):
        for p in prefixes:
            exact = p == "triage"
            if (module == p or (not exact and module.startswith(p + "."))) and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports(path: Path, typing: bool = False) -> set[str]:
    """triage modules this file imports when it runs (imports under `if TYPE_CHECKING:` are for the type
    checker only; `typing`: those too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if not typing and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("triage")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if not base.startswith("triage"):
                continue
            for a in node.names:  # `from triage.scan import prefiltered` imports a module
                sub = f"{base}.{a.name}"
                found.add(sub if (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py").exists()
                          or (PACKAGE.parent / Path(*sub.split("."))).is_dir() else base)
    found.discard(me)
    return found


GRAPH = {module_name(p): runtime_imports(p) for p in PACKAGE.rglob("*.py")}
TYPED_GRAPH = {module_name(p): runtime_imports(p, typing=True) for p in PACKAGE.rglob("*.py")}


def test_every_module_has_a_stage():
    assert [m for m in GRAPH if stage_of(m) < 0] == []


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_no_upward_import(module):
    mine = stage_of(module)
    upward = sorted(t for t in GRAPH[module] if stage_of(t) > mine)
    assert upward == [], f"{module} (stage {mine}) imports from later stages: {upward}"


def circles(graph: dict[str, set[str]], within: str = "triage") -> None:
    """Raise on an import circle among the modules under `within`."""
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> None:
        if m in path:
            raise AssertionError("import circle: " + " -> ".join(path[path.index(m):] + [m]))
        if m in done:
            return
        for t in sorted(graph.get(m, ())):
            if t in graph and t.startswith(within) and not m.startswith(t + "."):  # a package's own __init__ is not
                visit(t, path + [m])  # a circle
        done.add(m)

    for m in sorted(graph):
        if m.startswith(within):
            visit(m, [])


def test_no_import_circle():
    circles(GRAPH)


def test_no_import_circle_even_for_the_type_checker():
    """Modules do not name each other in a circle even under `if TYPE_CHECKING:` (prefiltered.py knows a scanner
    only as filescan.LineScanner)."""
    circles(TYPED_GRAPH)


def test_the_native_prefilter_interface_is_a_leaf():
    # `from triage.scan import _linescan` (the C extension) reads as the package; nothing else of triage but the
    # leaf below every stage where it installs its head tests for discovery and unwrap (triage/fastbytes.py)
    assert sorted(TYPED_GRAPH["triage.scan.native"]) == ["triage.fastbytes", "triage.scan"]
    assert not TYPED_GRAPH["triage.fastbytes"]
    assert "triage.scan.scanner" not in TYPED_GRAPH["triage.scan.prefiltered"]


def test_graph_is_read():
    """The checker sees real edges (a broken parser would pass every test above)."""
    assert "triage.scan.scanner" in GRAPH["triage.analyze"] or any(
        t.startswith("triage.scan") for t in GRAPH["triage.analyze"])
    assert "triage.library.rules" in GRAPH["triage.scan.scanner"]


def test_every_subpackage_ships_in_the_wheel():
    """pyproject.toml lists the packages the wheel holds; a stage folder missing from the list would install
    without its modules."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {module_name(p.parent / "__init__.py") for p in PACKAGE.rglob("__init__.py")}
    assert folders - listed == set()
    assert "triage.patterns_data" in listed  # the rule library, from patterns/
