"""pytest plugin: snapshot tests of every effective spec of a templates folder, on syrupy.

Installed with the package (a ``pytest11`` entry point) and off until asked for: it does nothing unless
``--template-root DIR`` is given or the ini option ``template_root`` is set.  Then the session gets one test
per pair (every template a project sees, and every system and department template seen from its own
scope), each comparing the pair's effective output with ``snapshots/<pair id>.yaml``.  Rendering variables
(``{{ user }}``) come from ``--template-engine-var NAME=VALUE`` (repeatable) or the ini option
``template_engine_vars`` (one ``NAME=VALUE`` a line); the command line wins for a name given in both.

``--snapshot-update`` (syrupy) writes the files and removes those of pairs that no longer exist.  A test
that fails lists the changed fields by path and the layer responsible, then the line diff of the file.

A test module can run the same checks over a folder of its own with :class:`OrgSnapshots`::

    SUITE = OrgSnapshots(REPO / "templates", REPO / "snapshots")

    @pytest.mark.parametrize("pair", SUITE.params())
    def test_example_org(pair, snapshot):
        SUITE.check(pair, snapshot)
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from template_engine.compose import MergeCache
from template_engine.diffing.fields import diff_outputs
from template_engine.diffing.objects import diff_objects
from template_engine.diffing.pairs import Outcome, Pair, compose_pair, pair_segment, pairs
from template_engine.errors import TemplateEngineError
from template_engine.loader.tree import load_org
from template_engine.org import Org, Scope, TemplateRef
from template_engine.render import RESERVED
from template_engine.snapshots.document import (
    MANIFESTS,
    SUFFIX,
    UPDATE_HINT,
    manifests_name,
    manifests_text,
    read_manifests,
    read_snapshot,
    snapshot_text,
)

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr
    from _pytest.reports import CollectReport
    from _pytest.terminal import TerminalReporter
    from syrupy.assertion import SnapshotAssertion

#: The name of every generated test: ``template_snapshot[projects/vision/mpi-horovod]``.
TEST_NAME = "template_snapshot"
#: The test that every file of the templates folder is valid.
FILES_TEST_NAME = "template_files_valid"
_SUITE = pytest.StashKey["OrgSnapshots"]()
_ON_COMMAND_LINE = pytest.StashKey[bool]()


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


class OrgSnapshots:
    """The snapshot checks of one templates folder against one snapshots folder."""

    def __init__(
        self, root: Path | str, snapshots: Path | str, variables: Mapping[str, str] | None = None
    ) -> None:
        self.root = Path(root).resolve()
        self.snapshots = Path(snapshots).resolve()
        self.variables = dict(variables or {})
        #: Scope-default merges shared by the pairs of ``self.org`` (loaded once per suite).
        self.cache: MergeCache = {}
        #: Whether a session collected these checks (as ``--template-root`` does).
        self.collected = False

    @cached_property
    def org(self) -> Org:
        return load_org(self.root)

    def pairs(self) -> list[Pair]:
        return pairs(self.org)

    def params(self) -> list[Any]:
        """``pytest.param`` per pair, for ``@pytest.mark.parametrize("pair", ...)``.

        A templates folder that cannot be read gives one parameter that fails with the reason.
        """
        try:
            return [pytest.param(pair, id=pair.id) for pair in self.pairs()]
        except TemplateEngineError as exc:
            return [pytest.param(exc, id="org")]

    def check_files(self, snapshot: SnapshotAssertion | None = None, test_name: str = TEST_NAME) -> None:
        """Fail when files of the templates folder are invalid: the pairs they would make are missing.

        Given syrupy's ``snapshot``, the snapshots of those pairs are kept (asserted as they are, under the
        names the pair tests ``test_name[<pair id>]`` give them), so ``--snapshot-update`` does not delete
        the last good snapshot of a pair whose file has a typo; the pair tests of ``--template-root`` do.
        """
        broken = self.org.broken
        if not broken:
            return
        if snapshot is not None:
            from template_engine.snapshots.extension import extension_for

            assertion = snapshot.use_extension(extension_for(self.snapshots, test_name))
            for path in self.kept():
                name = path.relative_to(self.snapshots).as_posix()[: -len(SUFFIX)]
                assertion(name=name).assert_match(path.read_text(encoding="utf-8"))
        lines = [problem.one_line() for file in sorted(broken) for problem in broken[file]]
        pytest.fail(
            f"{len(broken)} invalid file(s) in {_shown(self.root)}: the pairs they would make "
            "are missing from this run (their snapshots are kept until the files are fixed):\n"
            + "\n".join(f"  {line}" for line in lines),
            pytrace=False,
        )

    def broken_pairs(self) -> dict[str, str]:
        """Pair id -> the invalid template file that would make that pair (its snapshots are kept).

        A template file that does not validate gives no template, so its pairs vanish from ``pairs()``;
        these are the ids they would have: the template seen from its own scope and from every project
        below it (whether a project shadows it does not matter, a shadowed id is a pair of its own).
        """
        org, out = self.org, {}
        for ref, file in org.broken_refs.items():
            if not isinstance(ref, TemplateRef):
                continue
            name = pair_segment(ref.name)
            scope = ref.scope
            if scope.type == "project":
                out[f"projects/{pair_segment(ref.scope_name)}/{name}"] = file
                continue
            if scope.type == "cluster":
                out[f"clusters/{pair_segment(ref.scope_name)}/{name}"] = file
            if scope.type == "system":
                out[f"system/{name}"] = file
            below = {
                department: projects
                for department, projects in org.departments.items()
                if scope in org.chain_of(Scope("department", department))
            }
            for department, projects in below.items():
                out.setdefault(f"departments/{pair_segment(department)}/{name}", file)
                out.update({f"projects/{pair_segment(p)}/{name}": file for p in projects})
        return out

    def location(self, pair: Pair) -> Path:
        return self.snapshots / f"{pair.id}{SUFFIX}"

    def manifests_location(self, pair: Pair) -> Path:
        """The snapshot file of the pair's cluster objects: ``manifests/<pair id>.yaml``."""
        return self.snapshots / f"{manifests_name(pair)}{SUFFIX}"

    def orphans(self) -> list[Path]:
        """Snapshot files (effective specs and objects) of pairs the org no longer has, nor would have once
        its invalid files are fixed: the files ``--snapshot-update`` removes."""
        kept = set(self.kept())
        return [path for path in self._unpaired() if path not in kept]

    def kept(self) -> list[Path]:
        """Snapshot files without a pair because the pair's template file is invalid (:meth:`broken_pairs`):
        the files ``--snapshot-update`` keeps."""
        broken = self.broken_pairs()
        return [path for path in self._unpaired() if self.pair_of(path) in broken]

    def pair_of(self, path: Path) -> str:
        name = path.relative_to(self.snapshots).as_posix()[: -len(SUFFIX)]
        prefix = f"{MANIFESTS}/"
        return name[len(prefix) :] if name.startswith(prefix) else name

    def _unpaired(self) -> list[Path]:
        if not self.snapshots.is_dir():
            return []
        known = {self.location(pair) for pair in self.pairs()}
        known |= {self.manifests_location(pair) for pair in self.pairs()}
        return sorted(p for p in self.snapshots.rglob(f"*{SUFFIX}") if p.is_file() and p not in known)

    def check(self, pair: Pair | TemplateEngineError, snapshot: SnapshotAssertion) -> None:
        """Compare the pair's effective output and its cluster objects with their snapshots; fail with a
        readable diff of each that differs."""
        if isinstance(pair, TemplateEngineError):
            pytest.fail(
                f"cannot read the templates folder {_shown(self.root)}:\n{pair.render()}", pytrace=False
            )
        from template_engine.snapshots.extension import extension_for

        assertion = snapshot.use_extension(extension_for(self.snapshots))
        location, objects_location = self.location(pair), self.manifests_location(pair)
        outcome = compose_pair(self.org, pair, self.variables, self.cache)
        output = _recorded(outcome.output)
        objects = outcome.objects
        if output is None or objects is None:
            for name, kept in ((pair.id, location), (manifests_name(pair), objects_location)):
                if kept.is_file():
                    # The pair still exists: keep its last good snapshots instead of reporting them unused.
                    assertion(name=name).assert_match(kept.read_text(encoding="utf-8"))
            reasons = "\n".join(f"  {problem.one_line()}" for problem in outcome.problems)
            pytest.fail(f"{pair.id}: {pair.describe()} does not compose:\n{reasons}", pytrace=False)
        text = snapshot_text(pair, output)
        objects_text = manifests_text(pair, objects)
        recalled = []
        for name, wanted in ((pair.id, text), (manifests_name(pair), objects_text)):
            index = assertion.num_executions
            if assertion(name=name) == wanted:
                recalled.append(_SAME)
                continue
            result = assertion.executions[index]
            if result.exception is not None:
                raise result.exception
            recalled.append(result.recalled_data)
        failures = []
        if recalled[0] is not _SAME:
            failures.append(_failure(pair, location, recalled[0], text, output, outcome))
        if recalled[1] is not _SAME:
            failures.append(_objects_failure(pair, objects_location, recalled[1], objects_text, objects))
        if failures:
            pytest.fail("\n\n".join(failures), pytrace=False)

    def files_test(self) -> Callable[..., None]:
        def template_files_valid(snapshot: SnapshotAssertion) -> None:
            self.check_files(snapshot)

        return template_files_valid

    def test_for(self, pair: Pair) -> Callable[..., None]:
        def template_snapshot(snapshot: SnapshotAssertion) -> None:
            self.check(pair, snapshot)

        return template_snapshot


def _recorded(output: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a snapshot records of ``output``: not the warnings about variables the pair does not use (the
    variables are the whole suite's, each pair uses only some of them)."""
    if output is None:
        return None
    runnable = output["runnable"]
    kept = [w for w in runnable["warnings"] if not str(w["field"]).startswith("--var ")]
    return {**output, "runnable": {**runnable, "warnings": kept}}


#: A snapshot that matched (``recalled`` data may be anything, ``None`` included).
_SAME: Any = object()


def _line_diff(old_text: str, text: str) -> list[str]:
    return list(
        difflib.unified_diff(old_text.splitlines(), text.splitlines(), "recorded", "now", lineterm="", n=2)
    )[2:]


def _objects_failure(
    pair: Pair, location: Path, recalled: Any, text: str, objects: tuple[dict[str, Any], ...]
) -> str:
    shown = _shown(location)
    if recalled is None:
        return (
            f"{pair.id}: no snapshot of its cluster objects yet ({shown})\n"
            f"  {pair.describe()} is new, or the snapshot was deleted.\n"
            f"  Run {UPDATE_HINT} to write it, then review and commit the file."
        )
    old_text = recalled.decode() if isinstance(recalled, bytes) else str(recalled)
    lines = [f"{pair.id}: the cluster objects differ from their snapshot {shown}", f"  {pair.describe()}", ""]
    try:
        old = read_manifests(old_text, shown)
    except TemplateEngineError as exc:
        lines += [
            "the snapshot file cannot be read:",
            *(f"  {problem.one_line()}" for problem in exc.problems),
        ]
    else:
        changes = diff_objects(old, objects)
        lines.append("changed objects:")
        lines += [f"  {change.render()}" for change in changes] or ["  (none: only the file's text differs)"]
    lines += ["", "snapshot file (- recorded, + now):", *_line_diff(old_text, text)]
    lines += ["", f"If the change is intended, run {UPDATE_HINT} and commit the updated snapshot."]
    return "\n".join(lines)


def _failure(
    pair: Pair, location: Path, recalled: Any, text: str, output: dict[str, Any], outcome: Outcome
) -> str:
    shown = _shown(location)
    if recalled is None:
        return (
            f"{pair.id}: no snapshot yet ({shown})\n"
            f"  {pair.describe()} is new, or its snapshot was deleted.\n"
            f"  Run {UPDATE_HINT} to write it, then review and commit the file."
        )
    old_text = recalled.decode() if isinstance(recalled, bytes) else str(recalled)
    lines = [f"{pair.id}: the effective spec differs from its snapshot {shown}", f"  {pair.describe()}", ""]
    try:
        old = read_snapshot(old_text, shown)
    except TemplateEngineError as exc:
        lines += [
            "the snapshot file cannot be read:",
            *(f"  {problem.one_line()}" for problem in exc.problems),
        ]
    else:
        changes = diff_outputs(old, output, outcome.composition)
        lines.append("changed fields:")
        lines += [f"  {change.render()}" for change in changes] or ["  (none: only the file's text differs)"]
    lines += ["", "snapshot file (- recorded, + now):", *_line_diff(old_text, text)]
    lines += ["", f"If the change is intended, run {UPDATE_HINT} and commit the updated snapshot."]
    return "\n".join(lines)


# -- pytest integration -------------------------------------------------------------------------------------


class PairTest(pytest.Function):
    """One pair's snapshot test; reported at the templates folder, not at this module's source."""

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, None, self.name


class TemplatesFolder(pytest.File):
    """The collector of a templates folder (its ``org.yaml``): one :class:`PairTest` per pair, after a test
    that every file is valid."""

    def __init__(self, *, suite: OrgSnapshots, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite

    def collect(self) -> Iterator[pytest.Item]:
        self.suite.collected = True
        found = self.suite.pairs()
        yield PairTest.from_parent(self, name=FILES_TEST_NAME, callobj=self.suite.files_test())
        for pair in found:
            yield PairTest.from_parent(
                self,
                name=f"{TEST_NAME}[{pair.id}]",
                callobj=self.suite.test_for(pair),
            )

    def repr_failure(  # type: ignore[override]  # the signature of pytest.Collector's own override
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, TemplateEngineError):
            return f"cannot read the templates folder {_shown(self.suite.root)}:\n{excinfo.value.render()}"
        return super().repr_failure(excinfo)


@dataclass(frozen=True, slots=True)
class Settings:
    root: Path
    snapshots: Path
    #: ``--template-root`` was given on the command line (not only in the ini file).
    on_command_line: bool
    #: Rendering variables: the ini option's, then the command line's.
    variables: Mapping[str, str]


def _variables(config: pytest.Config) -> dict[str, str]:
    """The ini option ``template_engine_vars``, then ``--template-engine-var`` (which wins for a name given
    in both); each ``NAME=VALUE`` with ``NAME`` a plain identifier, once per source."""
    out: dict[str, str] = {}
    sources = (
        ("ini option template_engine_vars", config.getini("template_engine_vars") or [], True),
        ("--template-engine-var", config.getoption("template_engine_vars") or [], False),
    )
    for source, values, strip in sources:
        seen: set[str] = set()
        for raw in values:
            name, sep, value = str(raw).partition("=")
            name = name.strip()
            if not sep or not name.isidentifier():
                raise pytest.UsageError(f"{source}: {raw!r} is not NAME=VALUE with NAME a plain identifier")
            if name in RESERVED:
                reserved = ", ".join(sorted(RESERVED))
                raise pytest.UsageError(f"{source}: {name!r} is reserved (a variable is none of: {reserved})")
            if name in seen:
                raise pytest.UsageError(f"{source}: {name!r} is given more than once")
            seen.add(name)
            out[name] = value.strip() if strip else value
    return out


def settings(config: pytest.Config) -> Settings | None:
    """The folders to use, or ``None`` when the plugin was not asked for."""
    here = config.invocation_params.dir
    ini_dir = config.inipath.parent if config.inipath is not None else config.rootpath
    option, ini = config.getoption("template_root"), str(config.getini("template_root") or "")
    if not option and not ini:
        return None
    root = here / option if option else ini_dir / ini
    given = config.getoption("template_snapshots")
    ini_snapshots = str(config.getini("template_snapshots") or "")
    if given:
        snapshots = here / given
    elif ini_snapshots:
        snapshots = ini_dir / ini_snapshots
    else:
        snapshots = config.rootpath / "snapshots"
    return Settings(root.resolve(), snapshots.resolve(), bool(option), _variables(config))


def _walked(config: pytest.Config, root: Path) -> bool:
    """Whether pytest's walk of its arguments reaches ``root/org.yaml`` (and so calls the collect hook)."""
    org_yaml = root / "org.yaml"
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path == org_yaml or path in org_yaml.parents:
            return True
    return False


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("template_engine", "template_engine effective-spec snapshots")
    group.addoption(
        "--template-root",
        dest="template_root",
        metavar="DIR",
        default=None,
        help="snapshot-test every effective spec of the templates folder DIR (one test per pair); "
        "the plugin is off without this option or the template_root ini option",
    )
    group.addoption(
        "--template-snapshots",
        dest="template_snapshots",
        metavar="DIR",
        default=None,
        help="folder of the effective-spec snapshots (default: snapshots/ in the rootdir)",
    )
    group.addoption(
        "--template-engine-var",
        dest="template_engine_vars",
        action="append",
        metavar="NAME=VALUE",
        default=[],
        help="a rendering variable for {{ NAME }} in every pair (repeatable; wins over the ini option "
        "template_engine_vars)",
    )
    parser.addini("template_root", "templates folder to snapshot-test (relative to the ini file)", default="")
    parser.addini(
        "template_engine_vars",
        "rendering variables for every pair, one NAME=VALUE a line",
        type="linelist",
        default=[],
    )
    parser.addini("template_snapshots", "folder of the effective-spec snapshots (relative to the ini file)")


def pytest_configure(config: pytest.Config) -> None:
    found = settings(config)
    if found is None:
        return
    if not config.pluginmanager.hasplugin("syrupy"):
        raise pytest.UsageError(
            "template_engine snapshot tests (--template-root, template_root) need syrupy: pip install syrupy"
        )
    config.stash[_SUITE] = OrgSnapshots(found.root, found.snapshots, found.variables)
    config.stash[_ON_COMMAND_LINE] = found.on_command_line


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> TemplatesFolder | None:
    suite = parent.config.stash.get(_SUITE, None)
    if suite is None or file_path != suite.root / "org.yaml":
        return None
    return TemplatesFolder.from_parent(parent, path=file_path, suite=suite)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, CollectReport, CollectReport]:
    """Add the templates folder to the session when pytest's walk does not reach it (``testpaths``...).

    With explicit paths that miss it, only ``--template-root`` on the command line adds it: an ini option
    alone does not turn ``pytest tests/test_one.py`` into a run of every snapshot.
    """
    report = yield
    config = collector.config
    suite = config.stash.get(_SUITE, None)
    if isinstance(collector, pytest.Session) and report.passed and suite is not None:
        explicit = config.args_source is pytest.Config.ArgsSource.ARGS
        if not _walked(config, suite.root) and (not explicit or config.stash[_ON_COMMAND_LINE]):
            report.result.append(
                TemplatesFolder.from_parent(collector, path=suite.root / "org.yaml", suite=suite)
            )
    return report


def pytest_terminal_summary(terminalreporter: TerminalReporter, config: pytest.Config) -> None:
    """Name each snapshot file left without a pair and what ``--snapshot-update`` does with it: keeps it
    when the pair's template file is invalid (the pair comes back once the file is fixed), removes it when
    the pair is gone."""
    suite = config.stash.get(_SUITE, None)
    if suite is None or not suite.collected:
        return
    try:
        lines = update_plan(suite)
    except TemplateEngineError:
        return
    if lines:
        terminalreporter.write_sep("-", "template_engine snapshots")
        for line in lines:
            terminalreporter.write_line(line)


def update_plan(suite: OrgSnapshots) -> list[str]:
    """What ``--snapshot-update`` does with each snapshot file that has no pair in this run, one line a file,
    then a count of each (empty when every snapshot has its pair)."""
    broken, kept, gone = suite.broken_pairs(), suite.kept(), suite.orphans()
    lines = [
        f"kept: {_shown(path)} (its pair's file {broken[suite.pair_of(path)]} is invalid; "
        f"{UPDATE_HINT} keeps it: fix the file, not the snapshot)"
        for path in kept
    ]
    lines += [f"no pair any more: {_shown(path)} ({UPDATE_HINT} removes it)" for path in gone]
    if gone:
        lines.append(f"{len(gone)} unused snapshot(s); {UPDATE_HINT} removes them.")
    if kept:
        lines.append(f"{len(kept)} snapshot(s) of pairs whose files are invalid; {UPDATE_HINT} keeps them.")
    return lines
