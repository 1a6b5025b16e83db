"""``template-engine diff`` and ``template-engine impact``: what a change to a templates folder does.

Exit status: 0 when no pair differs, 1 when some pair does (so CI can gate on it), 2 on an error, including
an error of this program itself (one line on stderr, never a traceback: 1 must mean "differences").

Both keep what they learn about valid files in a cache between runs (``loader/facts.py``), so that a later
run parses only the files of the pairs it composes; ``--no-cache`` turns it off, and the folder is
``$TEMPLATE_ENGINE_CACHE_DIR``, else ``$XDG_CACHE_HOME/template-engine``, else ``~/.cache/template-engine``.
The answers are the same with or without it: a folder or file of it that another user owns or may write is
not used (a warning says why), rows this code did not write are ignored, and when a row turns out wrong
(:class:`~template_engine.loader.deferred.StaleFacts`) the command answers again believing no row.  The
cache also keeps what each pair composed to (``diffing/answers.py``): a pair whose kept outcome, for exactly
the same inputs, equals the other side's is not composed again, and the old side of a pair that differs is
the outcome kept for it (unless a change needs who used to set a removed value).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import click

from template_engine.cli.conventions import current, error_prefix, phase, say, warn
from template_engine.cli.options import EXIT_ERROR, EXIT_FINDINGS, F, emit, parse_vars, vars_option
from template_engine.errors import Problem, TemplateEngineError

if TYPE_CHECKING:  # the comparison, git and the loader are imported when a command runs, not at start
    from template_engine.diff import OrgDiff, PairDiff
    from template_engine.diffing.answers import Recall
    from template_engine.loader.facts import FactCache
    from template_engine.loader.gitrev import Version
    from template_engine.loader.sources import Source
    from template_engine.org import Org

__all__ = ["diff", "impact"]


def _fail(error: TemplateEngineError, where: str | None = None) -> NoReturn:
    prefix = f"in {where}: " if where else ""
    click.echo(f"{error_prefix()} {prefix}{error.render()}", err=True)
    sys.exit(EXIT_ERROR)


def _warning(message: str) -> None:
    warn(message)


def _guarded(func: F) -> F:
    """The command, where an error it does not expect (a bug) is one line on stderr and exit status 2, never a
    traceback and exit status 1 (which means "differences found")."""

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # the reader stopped reading (``| head``): nothing more to say, to anyone
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit's flush
            sys.exit(EXIT_ERROR)
        except Exception as exc:  # whatever it is: exit 2
            detail = " ".join(str(exc).split())[:500]
            click.echo(
                f"{error_prefix()} internal error of template-engine {func.__name__}: "
                f"{type(exc).__name__}: {detail} "
                "(a bug: please report it; --no-cache may avoid it)",
                err=True,
            )
            sys.exit(EXIT_ERROR)

    return cast(F, run)


def _options(func: F, markdown: bool = False) -> F:
    func = click.option(
        "--output",
        "-o",
        type=click.Choice(["text", "json", "yaml", "markdown"][: 4 if markdown else 3]),
        default="text",
        show_default=True,
        help="Output format (json and yaml with sorted keys"
        + ("; markdown: a pull-request comment)." if markdown else ")."),
    )(func)
    func = vars_option(func)
    func = click.option(
        "--cache/--no-cache",
        default=True,
        show_default=True,
        help="Remember which files are valid and what each pair composed to between runs (content-addressed; "
        "the answers are the same), and read only the files of the pairs that are compared and compose only "
        "those whose inputs are new. The folder: $TEMPLATE_ENGINE_CACHE_DIR, "
        "else $XDG_CACHE_HOME/template-engine, else ~/.cache/template-engine.",
    )(func)
    return click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("templates"),
        show_default=True,
        help="The templates folder (with org.yaml), as it is now.",
    )(func)


def cache_folder(environ: Mapping[str, str]) -> Path:
    """Where the fact cache lives: ``TEMPLATE_ENGINE_CACHE_DIR``, else ``XDG_CACHE_HOME/template-engine``,
    else ``~/.cache/template-engine``."""
    chosen = environ.get("TEMPLATE_ENGINE_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "template-engine"


def _facts(use: bool) -> FactCache | None:
    from template_engine.loader.facts import FactCache

    return FactCache(cache_folder(os.environ), warn=_warning) if use else None


def _compare(compare: Callable[[FactCache | None], OrgDiff], facts: FactCache | None) -> OrgDiff:
    """``compare(facts)``; when a row of the cache turns out wrong (a file it said was valid has problems),
    ``compare`` again believing no row (which also drops the wrong rows): the answer is the one without it.
    An error found while comparing (a revision's blob git cannot give, read when a pair needs it) is exit
    status 2, as it is while loading."""
    from template_engine.loader import tree
    from template_engine.loader.deferred import SourceFailed, StaleFacts

    try:
        try:
            return compare(facts)
        except StaleFacts as exc:
            if facts is None:  # pragma: no cover - no stand-in without the cache
                raise
            _warning(
                f"{exc.file}: the fact cache said valid, but it is not; answered again reading every file"
            )
            tree._Reuse.last = {}  # the stand-ins of the first try must not be reused
            facts.recheck()
            return compare(facts)
    except TemplateEngineError as exc:
        _fail(exc)
    except SourceFailed as exc:
        _fail(exc.error)


def _load_side(
    source: Source | None, where: str | None = None, facts: FactCache | None = None
) -> tuple[Org, dict[str, str]]:
    """The org at ``source`` and what the loader read each of its files as (``git:`` and its blob id, and
    the BLAKE2b digest of its bytes when they were read: the loader's own record of this load,
    ``tree._Reuse``), for the answers kept between runs (``diffing.answers``)."""
    from template_engine.loader import tree
    from template_engine.org import Org

    if source is None:  # the revision has no such folder: every pair of the other side is new
        return Org(), {}
    from template_engine.cli.options import org_counts

    with phase(f"loaded {where or 'the working tree'}") as said:
        try:
            org = tree.load_org(source, facts)
        except TemplateEngineError as exc:
            _fail(exc, where)
        said.append(org_counts(org))
    contents = {
        rel: f"git:{blob}" + (f" {digest}" if digest else "")
        for (_, rel, _, blob), (_, digest) in tree._Reuse.last.items()
    }
    return org, contents


def _answers(
    facts: FactCache | None, side: tuple[Org, dict[str, str]], variables: Mapping[str, str]
) -> Recall | None:
    """The answers of one side kept in the fact cache (none without it)."""
    from template_engine.diffing.answers import Answers

    return Answers.of(facts, side[0], side[1], variables) if facts is not None else None


def _diff_sides(
    old: tuple[Org, dict[str, str]],
    new: tuple[Org, dict[str, str]],
    variables: Mapping[str, str],
    facts: FactCache | None,
    file: str | None = None,
) -> OrgDiff:
    """``diff_orgs`` of the two sides, recalling the outcomes an earlier run kept for exactly the same
    inputs, and keeping what it composed (written at once: the loads wrote theirs)."""
    from template_engine.diff import diff_orgs

    recall = (_answers(facts, old, variables), _answers(facts, new, variables))
    result = diff_orgs(old[0], new[0], variables, file=file, recall=recall)
    if facts is not None:
        facts.flush()
    return result


def _describe(diff: PairDiff) -> list[str]:
    old_errors, new_errors = diff.error_lines()
    kind = f"({diff.pair.template_words})"
    if diff.status == "disappeared":
        return [f"- {diff.id}  {kind} disappeared"]
    if diff.status == "appeared":
        assert diff.new is not None
        status = diff.new.status()
        composition = diff.new.composition
        if composition is not None and composition.runnable.issue:
            status += f": {composition.runnable.issue}"
        return [f"+ {diff.id}  {kind} appeared, {status}"] + [f"    {line}" for line in new_errors]
    lines = [f"~ {diff.id}  {kind}"]
    if new_errors:
        lines.append("    still fails to compose, now:" if old_errors else "    now fails to compose:")
        lines += [f"      {line}" for line in new_errors]
    elif old_errors:
        lines.append("    composes again; it failed with:")
        lines += [f"      {line}" for line in old_errors]
    lines += [f"    {change.render()}" for change in diff.changes]
    if diff.object_changes:
        lines.append("    objects:")
        lines += [f"      {change.render()}" for change in diff.object_changes]
    return lines


#: The colour of a pair's marker line in ``diff``'s text: appeared, disappeared, changed.
_MARKS = {"+": "green", "-": "red", "~": "yellow"}


def _marked(line: str) -> str:
    """A line of a pair's description, its ``+``/``-``/``~`` marker line coloured (kept only on a terminal
    or with ``--color always``)."""
    color = _MARKS.get(line[:1]) if line[1:2] == " " else None
    return click.style(line, fg=color) if color else line


def _broken(result: OrgDiff) -> list[str]:
    lines = []
    for file, problems in result.broken:
        lines.append(f"! {file} is invalid (the pairs it would make are missing):")
        lines += [f"    {problem.one_line()}" for problem in problems]
    return lines


def _report(result: OrgDiff, output: str, head: dict[str, Any], title: str | None = None) -> NoReturn:
    if output == "markdown":
        from template_engine.reports.markdown import diff_markdown

        click.echo(diff_markdown(result, str(head.get("against", ""))), nl=False)
    elif output == "text":
        if title:
            say(title)
        for line in _broken(result):
            say(line)
        for diff in result.pairs:
            for line in _describe(diff):
                say(_marked(line))
        say(result.summary_line())
    else:
        broken = [
            {"file": file, "errors": [p.to_dict() for p in problems]} for file, problems in result.broken
        ]
        report = {**head, "summary": result.summary(), "pairs": [d.to_dict() for d in result.pairs]}
        emit({**report, "invalidFiles": broken}, output)
    sys.exit(EXIT_FINDINGS if result.differs else 0)


def _version_name(version: Version) -> str:
    return f"{version.label} ({version.revision[:12]})" if version.revision else version.label


def _version(root: Path, against: str) -> Version:
    from template_engine.loader.gitrev import open_version

    try:
        return open_version(root, against)
    except TemplateEngineError as exc:
        _fail(exc)


@click.command()
@functools.partial(_options, markdown=True)
@click.option(
    "--against",
    required=True,
    metavar="FOLDER|REV",
    help="What to compare with: another templates folder, or a git revision of the repository that holds "
    "--root (HEAD~1, origin/main, a commit); a name that is an existing folder is taken as the folder.",
)
@_guarded
def diff(root: Path, against: str, variables: tuple[str, ...], output: str, cache: bool) -> None:
    """Every (project, template) pair whose effective spec or cluster objects differ from --against.

    Lists the changed fields by path with old and new values and the layer that now sets each, the changed
    values of the pair's cluster objects by object path, and the pairs that appeared or disappeared.  Exit
    status 0 when nothing differs, 1 when something does.
    """
    from template_engine.loader.sources import FolderSource
    from template_engine.loader.tree import resolve_root

    root = resolve_root(root)
    values = parse_vars(variables)
    versions: list[Version] = []  # opened once, after the working tree is read (a missing --root first)

    def compare(facts: FactCache | None) -> OrgDiff:
        new = _load_side(FolderSource(root), None, facts)
        if not versions:
            versions.append(_version(root, against))
            if not versions[0].exists and not current().quiet:
                click.echo(f"note: {root} does not exist at {against}; every pair is new", err=True)
        version = versions[0]
        old = _load_side(version.source if version.exists else None, _version_name(version), facts)
        return _diff_sides(old, new, values, facts)

    result = _compare(compare, _facts(cache))
    _report(result, output, {"root": str(root), "against": against})


def _inside(file: Path, root: Path) -> str:
    try:
        return file.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        _fail(
            TemplateEngineError([Problem(f"{str(file)!r} is not inside the templates folder {str(root)!r}")])
        )


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@_options
@click.option(
    "--against",
    default="HEAD",
    show_default=True,
    metavar="FOLDER|REV",
    help="The version FILE changed from: a git revision of the repository that holds --root, or a folder.",
)
@_guarded
def impact(
    file: Path, root: Path, against: str, variables: tuple[str, ...], output: str, cache: bool
) -> None:
    """Every pair that a change to FILE (defaults, policy, asset, template, cluster.yaml) affects, and how.

    Compares --against with the same folder where only FILE is replaced by the working tree's FILE (or
    removed, if it no longer exists).  Lists the changed fields and object values of each affected pair,
    including runnability turning false and pairs that no longer compose.  Exit status 1 when some pair
    changes.
    """
    from template_engine.loader.sources import FolderSource, OverlaySource
    from template_engine.loader.tree import resolve_root

    root = resolve_root(root)
    values = parse_vars(variables)
    rel = _inside(file, root)
    version = _version(root, against)
    # The revision (or folder) with only FILE taken from the working tree: replaced, added or removed.
    changed = OverlaySource(version.source, rel, FolderSource(root))
    if changed.kind(rel) != "file" and version.source.kind(rel) != "file":
        _fail(TemplateEngineError([Problem(f"{rel} exists neither in {root} nor in {against}")]))
    name = _version_name(version)

    def compare(facts: FactCache | None) -> OrgDiff:
        old = _load_side(version.source if version.exists else None, name, facts)
        new = _load_side(changed, f"{name} with the working tree's {rel}", facts)
        return _diff_sides(old, new, values, facts, file=rel)

    result = _compare(compare, _facts(cache))
    users = len(result.users)
    title = f"{rel} against {against}: used by {users} pair{'s' * (users != 1)}"
    head = {"root": str(root), "against": against, "file": rel, "usedBy": list(result.users)}
    _report(result, output, head, title)
