"""The import rule: imports point one way, from the core towards the edges, and never in a circle.

The edges are the command line (``cli/``, ``__main__``), the service (``service/``) and the pytest side
(``snapshots/``, ``pytest_plugin``).  Everything else is the core: it never imports an edge, and the loader
never imports the composition.  Every import counts, at module level or inside a function, under
``TYPE_CHECKING`` or not, absolute or relative.  The modules are read with ``ast``, never imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "template_engine"
ROOT = "template_engine"

#: The edges, by module prefix: everything else is the core.
EDGES = ("cli", "service", "snapshots", "pytest_plugin", "__main__")
#: What the loader (it reads an org; the composition reads the org) may not import.
COMPOSITION = ("compose", "layers", "runnable", "explain", "diff", "diffing")
#: What each edge may not import: an edge is a thin adapter, and no edge leans on another one's adapter.
EDGE_RULES: dict[str, tuple[str, ...]] = {
    "cli": ("snapshots", "pytest_plugin"),
    "service": ("cli", "snapshots", "pytest_plugin", "__main__"),
    "snapshots": ("cli", "service", "pytest_plugin", "__main__"),
    "pytest_plugin": ("cli", "service", "__main__"),
}


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str) -> Iterator[str]:
    """The modules of the package that ``module`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == ROOT)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield sub if sub in MODULES else target


GRAPH: dict[str, set[str]] = {module: set(_imports(module)) for module in MODULES}


def _local(module: str) -> str:
    """``template_engine.loader.tree`` -> ``loader.tree``; the package itself -> ``""``."""
    return module[len(ROOT) + 1 :] if module != ROOT else ""


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    local = _local(module)
    return any(local == p or local.startswith(f"{p}.") for p in prefixes)


CORE = sorted(m for m in MODULES if m != ROOT and not _under(m, EDGES))


def test_the_package_is_read() -> None:
    assert {"template_engine.compose", "template_engine.cli", "template_engine.walk"} <= set(MODULES)
    assert "template_engine.errors" in GRAPH["template_engine.compose"]
    assert all(target in MODULES for targets in GRAPH.values() for target in targets)


@pytest.mark.parametrize("module", CORE, ids=_local)
def test_the_core_imports_no_edge(module: str) -> None:
    upward = sorted(t for t in GRAPH[module] if t == ROOT or _under(t, EDGES))
    assert upward == [], f"{module} imports {upward}"


def test_the_public_api_imports_no_edge() -> None:
    assert sorted(t for t in GRAPH[ROOT] if _under(t, EDGES)) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _under(m, ("loader",))), ids=_local)
def test_the_loader_does_not_import_the_composition(module: str) -> None:
    found = sorted(t for t in GRAPH[module] if _under(t, COMPOSITION))
    assert found == [], f"{module} imports {found}"


@pytest.mark.parametrize("edge", sorted(EDGE_RULES))
def test_an_edge_does_not_import_another_edge(edge: str) -> None:
    found = sorted(
        f"{module} -> {target}"
        for module in MODULES
        if _under(module, (edge,))
        for target in GRAPH[module]
        if _under(target, EDGE_RULES[edge])
    )
    assert found == []


def test_the_command_modules_do_not_import_the_command_group() -> None:
    found = sorted(m for m in MODULES if _under(m, ("cli",)) and "template_engine.cli" in GRAPH[m])
    assert found == []


def _cycle() -> list[str] | None:
    """One import cycle, as the modules along it, or ``None``."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(GRAPH):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_no_import_cycle() -> None:
    cycle = _cycle()
    assert cycle is None, " -> ".join(cycle or ())


def test_the_cycle_finder_finds_a_cycle() -> None:
    saved = {m: set(t) for m, t in GRAPH.items()}
    try:
        GRAPH["template_engine.paths"].add("template_engine.errors")  # errors imports paths
        assert _cycle() == ["template_engine.errors", "template_engine.paths", "template_engine.errors"]
    finally:
        GRAPH.clear()
        GRAPH.update(saved)
