"""Another version of a templates folder: a folder as it is, or the folder as a git revision has it.

The only module that runs git.  A revision is read with ``git ls-tree`` and ``git cat-file --batch`` (exact
blobs: no ``export-ignore`` or ``export-subst`` rewriting as ``git archive`` would do) into a temporary
folder that is removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from template_engine.errors import Problem, TemplateEngineError

_REVISION = "a commit, branch or tag such as HEAD~1 or origin/main"


class GitError(TemplateEngineError):
    """git is missing, the folder is not in a repository, or the revision is unknown."""


def _error(message: str, expected: str | None = None) -> GitError:
    return GitError([Problem(message, (), None, expected)])


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    except FileNotFoundError:
        raise _error("git is not installed (needed to read another revision)") from None
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        raise _error(f"git {args[0]} failed: {detail[-1] if detail else f'exit status {done.returncode}'}")
    return done.stdout


@dataclass(frozen=True, slots=True)
class Version:
    """The other side of a comparison: a folder (``None`` when the revision has no such folder)."""

    root: Path | None
    label: str
    revision: str | None = None


def _existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return candidate
    return Path.cwd()


def _repository(root: Path) -> tuple[Path, str]:
    """The top of the repository holding ``root`` and ``root`` relative to it (POSIX, ``""`` at the top)."""
    where = _existing(root.resolve())
    try:
        top = Path(_git(where, "rev-parse", "--show-toplevel").decode().strip())
    except GitError as exc:
        raise _error(
            f"--against is not a folder, and {str(root)!r} is not inside a git repository "
            f"({exc.problems[0].message})",
            "--against naming another templates folder, or --root inside a git repository",
        ) from None
    try:
        rel = root.resolve().relative_to(top.resolve())
    except ValueError:
        raise _error(f"{str(root)!r} is outside the repository at {str(top)!r}") from None
    return top, rel.as_posix() if rel.parts else ""


def _commit(top: Path, revision: str) -> str:
    if revision.startswith("-"):
        raise _error(
            f"{revision!r} is not a revision", "a commit, branch or tag such as HEAD~1 or origin/main"
        )
    try:
        return _git(top, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").decode().strip()
    except GitError:
        raise _error(
            f"--against {revision!r} is neither a folder nor a revision of the repository at {str(top)!r}",
            f"a folder, or {_REVISION}",
        ) from None


def _extract(top: Path, commit: str, prefix: str, into: Path) -> int:
    """Write the blobs under ``prefix`` at ``commit`` below ``into``; the number of files written."""
    spec = [f":(literal){prefix}"] if prefix else []
    listing = _git(top, "ls-tree", "-r", "-z", "--full-tree", commit, "--", *spec)
    blobs: list[tuple[str, PurePosixPath]] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        if kind != "blob" or mode == "120000":  # submodules and symbolic links are not documents
            continue
        path = PurePosixPath(name.decode("utf-8", errors="surrogateescape"))
        rel = path.relative_to(prefix) if prefix else path
        if ".." in rel.parts:
            continue
        blobs.append((sha, rel))
    if not blobs:
        return 0
    batch = _git(top, "cat-file", "--batch", stdin="".join(f"{sha}\n" for sha, _ in blobs).encode())
    pos = 0
    for sha, rel in blobs:
        header_end = batch.index(b"\n", pos)
        got, _, size = batch[pos:header_end].decode().split()
        if got != sha:
            raise _error(f"git cat-file returned {got} where {sha} was expected")
        start = header_end + 1
        target = into.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(batch[start : start + int(size)])
        pos = start + int(size) + 1
    return len(blobs)


@contextmanager
def materialise(root: Path, against: str) -> Iterator[Version]:
    """``against`` as a folder: itself when it is a directory, else ``root`` at that git revision."""
    if Path(against).is_dir():
        yield Version(Path(against), against)
        return
    top, prefix = _repository(root)
    commit = _commit(top, against)
    with tempfile.TemporaryDirectory(prefix="template-engine-") as tmp:
        folder = Path(tmp) / "templates"
        folder.mkdir()
        written = _extract(top, commit, prefix, folder)
        yield Version(folder if written else None, against, commit)


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def copy_tree(version: Version, into: Path) -> Path:
    """A copy of ``version``'s folder at ``into`` (an empty folder when it has none).

    Files are hard links where possible: replace a file with :func:`replace_file`, never write into one.
    """
    if version.root is None:
        into.mkdir(parents=True)
    else:
        shutil.copytree(version.root, into, copy_function=_link_or_copy)
    return into


def replace_file(target: Path, source: Path | None) -> None:
    """Put ``source``'s content at ``target`` (a fresh file, not a write through a link), or remove it."""
    target.unlink(missing_ok=True)
    if source is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
