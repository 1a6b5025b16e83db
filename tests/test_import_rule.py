"""The import rule: imports point one way, from the core towards the edges, and never in a circle.

The edges are the command line (``cli/``, ``__main__``), the service (``service/``), the language server
(``lsp/``) and the pytest side (``snapshots/``, ``pytest_plugin``).  Everything else is the core: it never
imports an edge, and the loader never imports the composition.  Every import counts, at module level or
inside a function, under ``TYPE_CHECKING`` or not, absolute or relative.  The modules are read with
``ast``, never imported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "template_engine"
ROOT = "template_engine"

#: The edges, by module prefix: everything else is the core.
EDGES = ("cli", "service", "lsp", "snapshots", "pytest_plugin", "__main__")
#: What the loader (it reads an org; the composition reads the org) may not import.
COMPOSITION = ("compose", "layers", "runnable", "explain", "diff", "diffing")
#: What each edge may not import: an edge is a thin adapter, and no edge leans on another one's adapter.
EDGE_RULES: dict[str, tuple[str, ...]] = {
    "cli": ("snapshots", "pytest_plugin"),
    "service": ("cli", "lsp", "snapshots", "pytest_plugin", "__main__"),
    "lsp": ("cli", "service", "snapshots", "pytest_plugin", "__main__"),
    "snapshots": ("cli", "service", "pytest_plugin", "__main__"),
    "pytest_plugin": ("cli", "service", "__main__"),
}


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@cache
def _tree(module: str) -> ast.Module:
    """``module`` parsed, once per process and only when a test asks (not while the tests are collected)."""
    path = MODULES[module]
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _imports(module: str) -> Iterator[str]:
    """The modules of the package that ``module`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(_tree(module)):
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


@cache
def graph() -> dict[str, frozenset[str]]:
    """Each module of the package and the modules of the package it imports."""
    return {module: frozenset(_imports(module)) for module in MODULES}


def _local(module: str) -> str:
    """``template_engine.loader.tree`` -> ``loader.tree``; the package itself -> ``""``."""
    return module[len(ROOT) + 1 :] if module != ROOT else ""


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    local = _local(module)
    return any(local == p or local.startswith(f"{p}.") for p in prefixes)


CORE = sorted(m for m in MODULES if m != ROOT and not _under(m, EDGES))


def test_the_package_is_read() -> None:
    assert {"template_engine.compose", "template_engine.cli", "template_engine.walk"} <= set(MODULES)
    assert "template_engine.errors" in graph()["template_engine.compose"]
    assert all(target in MODULES for targets in graph().values() for target in targets)


@pytest.mark.parametrize("module", CORE, ids=_local)
def test_the_core_imports_no_edge(module: str) -> None:
    upward = sorted(t for t in graph()[module] if t == ROOT or _under(t, EDGES))
    assert upward == [], f"{module} imports {upward}"


def test_the_public_api_imports_no_edge() -> None:
    assert sorted(t for t in graph()[ROOT] if _under(t, EDGES)) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _under(m, ("loader",))), ids=_local)
def test_the_loader_does_not_import_the_composition(module: str) -> None:
    found = sorted(t for t in graph()[module] if _under(t, COMPOSITION))
    assert found == [], f"{module} imports {found}"


@pytest.mark.parametrize("edge", sorted(EDGE_RULES))
def test_an_edge_does_not_import_another_edge(edge: str) -> None:
    found = sorted(
        f"{module} -> {target}"
        for module in MODULES
        if _under(module, (edge,))
        for target in graph()[module]
        if _under(target, EDGE_RULES[edge])
    )
    assert found == []


def test_the_command_modules_do_not_import_the_command_group() -> None:
    found = sorted(m for m in MODULES if _under(m, ("cli",)) and "template_engine.cli" in graph()[m])
    assert found == []


def _cycle(imports: dict[str, frozenset[str]]) -> list[str] | None:
    """One import cycle of ``imports``, as the modules along it, or ``None``."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(imports[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(imports):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_no_import_cycle() -> None:
    cycle = _cycle(graph())
    assert cycle is None, " -> ".join(cycle or ())


def test_the_cycle_finder_finds_a_cycle() -> None:
    imports = dict(graph())
    imports["template_engine.paths"] = imports["template_engine.paths"] | {"template_engine.errors"}
    # errors imports paths, so the edge added closes a circle
    assert _cycle(imports) == ["template_engine.errors", "template_engine.paths", "template_engine.errors"]


# -- I/O: only the modules of the map do it -----------------------------------------------------------------

#: The modules of the core that do I/O, and what they do; every other module of the core does none.
#: docs/architecture.md ("Where the I/O is") names each of them, and every edge module that does I/O.
CORE_IO: dict[str, str] = {
    "loader.sources": "reads a folder: the loader's I/O seam (os.scandir, stat, read_bytes)",
    "loader.gitrev": "runs git for a revision's listing and blobs (subprocess)",
    "loader.facts": "the facts cache between processes: an SQLite file, a lock file, a warning on stderr",
    "loader.tree": "resolve_root: whether templates/ and ./org.yaml exist",
    "policy.vocabulary": "reads the packaged vocabulary.json",
    "cluster.schemas": "reads the packaged CRD schemas and kubernetes-validate's schema files",
    "policy.vocabulary_source": "the maintainer's script that writes vocabulary.json from Run:ai's document",
    "staging": "writes folders aside and puts them in place by renames",
    "views.site": "writes the static report",
    "views.html": "Jinja2's FileSystemLoader reads the page templates",
}
#: Modules whose import is I/O: processes, databases, sockets, the network, file trees, terminals.
IO_MODULES = (
    "subprocess",
    "sqlite3",
    "socket",
    "ssl",
    "select",
    "selectors",
    "asyncio",
    "signal",
    "multiprocessing",
    "shutil",
    "tempfile",
    "glob",
    "fcntl",
    "mmap",
    "http",
    "urllib",
    "ftplib",
    "smtplib",
    "webbrowser",
    "importlib.resources",
    "sqlalchemy",
    "psycopg",
    "httpx",
    "requests",
    "uvicorn",
)
#: ...and the pure parts of those packages.
PURE_MODULES = ("urllib.parse",)
#: ``os.NAME`` that is I/O (the environment, files, processes).
OS_IO = frozenset(
    [
        "environ",
        "environb",
        "getenv",
        "getenvb",
        "putenv",
        "unsetenv",
        "listdir",
        "scandir",
        "walk",
        "fwalk",
        "stat",
        "lstat",
        "open",
        "read",
        "write",
        "remove",
        "unlink",
        "rename",
        "renames",
        "replace",
        "mkdir",
        "makedirs",
        "rmdir",
        "removedirs",
        "link",
        "symlink",
        "readlink",
        "chmod",
        "chown",
        "fchmod",
        "fdopen",
        "fsync",
        "close",
        "truncate",
        "utime",
        "access",
        "system",
        "popen",
        "getcwd",
        "getcwdb",
        "chdir",
        "getpid",
        "getppid",
        "kill",
        "urandom",
        "fork",
        "startfile",
    ]
)
#: ``os.path.NAME`` that reads the file system.
OS_PATH_IO = frozenset(
    [
        "exists",
        "lexists",
        "isfile",
        "isdir",
        "islink",
        "ismount",
        "isjunction",
        "realpath",
        "abspath",
        "samefile",
        "getsize",
        "getmtime",
        "getatime",
        "getctime",
        "expanduser",
        "expandvars",
    ]
)
#: ``time.NAME`` that reads the clock or waits.
TIME_IO = frozenset(
    [
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "perf_counter",
        "perf_counter_ns",
        "process_time",
        "localtime",
        "gmtime",
        "ctime",
        "sleep",
    ]
)
#: Methods that read or write the file system (``pathlib``'s), or read the clock (``datetime``'s).
METHOD_IO = frozenset(
    [
        "read_text",
        "read_bytes",
        "write_text",
        "write_bytes",
        "iterdir",
        "glob",
        "rglob",
        "exists",
        "is_file",
        "is_dir",
        "is_symlink",
        "lstat",
        "mkdir",
        "unlink",
        "rmdir",
        "touch",
        "symlink_to",
        "hardlink_to",
        "readlink",
        "chmod",
        "resolve",
        "samefile",
        "expanduser",
        "home",
        "cwd",
        "owner",
        "now",
        "utcnow",
        "today",
        "FileSystemLoader",
        "PackageLoader",
    ]
)
#: Builtins that are I/O, and what of ``sys`` is the process's environment or terminal.
BUILTIN_IO = frozenset({"open", "input", "print"})
SYS_IO = frozenset({"argv", "stdin", "stdout", "stderr", "orig_argv"})


def _io_module(name: str) -> bool:
    if any(name == p or name.startswith(f"{p}.") for p in PURE_MODULES):
        return False
    return any(name == p or name.startswith(f"{p}.") for p in IO_MODULES)


def _io_uses(tree: ast.Module) -> list[str]:
    """Every I/O a module's syntax tree does: ``line: what``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            found += [(line, f"import {a.name}") for a in node.names if _io_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if _io_module(node.module):
                found.append((line, f"from {node.module} import ..."))
            elif node.module in ("os", "time", "sys"):
                names = {"os": OS_IO, "time": TIME_IO, "sys": SYS_IO}[node.module]
                found += [
                    (line, f"from {node.module} import {a.name}") for a in node.names if a.name in names
                ]
            elif node.module == "os.path":
                found += [(line, f"from os.path import {a.name}") for a in node.names if a.name in OS_PATH_IO]
        elif isinstance(node, ast.Attribute):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("os", "time", "sys"):
                names = {"os": OS_IO, "time": TIME_IO, "sys": SYS_IO}[owner.id]
                if node.attr in names:
                    found.append((line, f"{owner.id}.{node.attr}"))
            elif (
                isinstance(owner, ast.Attribute)
                and isinstance(owner.value, ast.Name)
                and (owner.value.id, owner.attr) == ("os", "path")
            ):
                if node.attr in OS_PATH_IO:
                    found.append((line, f"os.path.{node.attr}"))
            elif node.attr in METHOD_IO:
                found.append((line, f".{node.attr}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in BUILTIN_IO:
            found.append((line, f"{node.func.id}()"))
    return [f"{line}: {what}" for line, what in sorted(set(found))]


@cache
def io_uses() -> dict[str, list[str]]:
    """Every I/O each module of the package does, by its name inside the package."""
    return {_local(m): _io_uses(_tree(m)) for m in MODULES}


@pytest.mark.parametrize("module", [_local(m) for m in CORE if _local(m) not in CORE_IO])
def test_the_core_does_no_io_outside_the_map(module: str) -> None:
    assert io_uses()[module] == [], f"{module} does I/O; only {sorted(CORE_IO)} may (docs/architecture.md)"


@pytest.mark.parametrize("module", sorted(CORE_IO))
def test_each_module_of_the_map_does_io(module: str) -> None:
    """The map stays true: a module that no longer does I/O leaves it."""
    assert f"{ROOT}.{module}" in MODULES
    assert io_uses()[module] != []


def test_the_architecture_page_names_every_module_that_does_io() -> None:
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Where the I/O is", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z_][a-z0-9_]*(?:[./][a-z_][a-z0-9_]*)*)(?:\.py)?`", section))
    named = {n.replace("/", ".").removesuffix(".py") for n in named}
    doing = {module for module, uses in io_uses().items() if uses and module}
    assert sorted(doing - named) == []
    assert sorted(set(CORE_IO) - named) == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("import subprocess", ["1: import subprocess"]),
        ("from sqlite3 import connect", ["1: from sqlite3 import ..."]),
        ("import os\nx = os.environ['A']", ["2: os.environ"]),
        ("from os import getenv", ["1: from os import getenv"]),
        ("import os\nos.path.exists('x')", ["2: os.path.exists"]),
        ("import time\nt = time.time()", ["2: time.time"]),
        ("import datetime\nd = datetime.datetime.now()", ["2: .now"]),
        ("from pathlib import Path\nPath('x').read_text()", ["2: .read_text"]),
        ("with open('x') as f:\n    pass", ["1: open()"]),
        ("import urllib.request", ["1: import urllib.request"]),
        ("import http.client", ["1: import http.client"]),
        ("import socket", ["1: import socket"]),
        ("import urllib.parse\nimport os\nos.path.join('a', 'b')\n'a'.replace('a', 'b')", []),
    ],
)
def test_the_io_reader_sees_each_kind_of_io(text: str, found: list[str]) -> None:
    assert _io_uses(ast.parse(text)) == found


# -- the architecture page's module map and its walks --------------------------------------------------------


def _page_section(title: str) -> str:
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    return page.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_architecture_page_names_every_module() -> None:
    """docs/architecture.md ("The modules") names every module of the package by its path."""
    section = _page_section("The modules")
    named = set(re.findall(r"`([A-Za-z0-9_/]+\.py)`", section))
    rows = set(re.findall(r"^\| `([A-Za-z0-9_/]+\.py)` \|", section, re.MULTILINE))
    modules = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}
    assert sorted(modules - named) == []
    assert sorted(rows - modules) == []  # a row of a module that is gone


def recursions(tree: ast.Module) -> list[list[tuple[str, str | None]]]:
    """The functions of a module that call themselves, or call each other in a cycle: each cycle as its
    ``(function name, class name)`` members.  A bare name calls the function of that name defined in the
    module or in an enclosing function; ``self.f``/``cls.f`` calls the method ``f`` of the same class."""
    functions: dict[int, tuple[ast.AST, str, str | None, tuple[int, ...]]] = {}

    def collect(node: ast.AST, scopes: tuple[int, ...], cls: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[id(child)] = (child, child.name, cls, scopes)
                collect(child, (*scopes, id(child)), None)
            elif isinstance(child, ast.ClassDef):
                collect(child, scopes, child.name)
            else:
                collect(child, scopes, cls)

    collect(tree, (), None)
    calls: dict[int, set[int]] = {key: set() for key in functions}
    for key, (node, _, cls, scopes) in functions.items():
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            target = call.func
            if isinstance(target, ast.Name):
                visible = (*scopes, key)
                enclosing = {visible[:i] for i in range(len(visible) + 1)}
                calls[key] |= {
                    other
                    for other, (_, name, other_cls, where) in functions.items()
                    if name == target.id and other_cls is None and where in enclosing
                }
            elif (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id in ("self", "cls")
                and cls is not None
            ):
                calls[key] |= {
                    other
                    for other, (_, name, other_cls, where) in functions.items()
                    if name == target.attr and other_cls == cls and where == scopes
                }
    reach: dict[int, set[int]] = {}
    for key in functions:
        seen, todo = set(), list(calls[key])
        while todo:
            other = todo.pop()
            if other not in seen:
                seen.add(other)
                todo.extend(calls[other])
        reach[key] = seen
    cycles: list[list[tuple[str, str | None]]] = []
    done: set[int] = set()
    for key in functions:
        if key in reach[key] and key not in done:
            members = [other for other in functions if other in reach[key] and key in reach[other]]
            done |= set(members)
            cycles.append(sorted((functions[m][1], functions[m][2]) for m in members))
    return cycles


def test_the_recursion_finder_finds_self_and_mutual_calls() -> None:
    text = (
        "def f(x):\n    return f(x)\n"
        "def g(x):\n    return h(x)\n"
        "def h(x):\n    return g(x)\n"
        "def pairs(x):\n    return 1\n"
        "class C:\n    def pairs(self):\n        return pairs(self)\n"
        "    def walk(self, v):\n        return [self.walk(i) for i in v]\n"
    )
    assert sorted(recursions(ast.parse(text))) == [
        [("f", None)],
        [("g", None), ("h", None)],
        [("walk", "C")],
    ]


def test_the_architecture_page_names_every_recursion() -> None:
    """docs/architecture.md ("The walks that remain, and why") names every recursive function of the package
    (by its name or its class) and its module: a new walk is listed there with its reason.  Walks with a
    stack of their own, and a call through an alias (``build = self.build``), are listed by hand: this finds
    only recursion it can see."""
    section = _page_section("The walks that remain, and why")
    named = set(re.findall(r"`([^`]+)`", section))
    words = {word for text in named for word in re.split(r"[^A-Za-z0-9_]+", text) if word}
    missing = []
    for module, path in MODULES.items():
        rel = path.relative_to(PACKAGE).as_posix()
        for cycle in recursions(_tree(module)):
            for name, cls in cycle:
                if not any(rel in text for text in named) or not ({name, cls} & words):
                    missing.append(f"{rel}: {cls + '.' if cls else ''}{name}")
    assert missing == []
