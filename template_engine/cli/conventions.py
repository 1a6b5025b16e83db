"""The conventions every command follows: ``-q/--quiet``, ``-v/--verbose`` and ``--color`` (docs/cli.md,
"Quiet, verbose and colour").

They are options of the group (``template-engine -q check``), read here by the commands through the root
context.  This module is imported when the program starts, so it imports only click and the standard library
(``benchmarks/bench_startup.py``).

- quiet: the text output (tables, summaries, notes) is not printed, nor any warning; errors still are, on
  standard error, and the exit status says the rest.  The machine formats (``-o json|yaml|sarif|junit|
  policy-report|markdown``) are printed as always: asking for one is asking for its output.
- verbose: on standard error, lines ``info: ...`` saying what was read (folder, counts) and how long each
  phase took.  Standard output is the same as without it, so machine formats stay parseable.
- colour: the status words of ``check``, the ``+``/``-``/``~`` lines of ``diff``, and the ``error:`` and
  ``warning:`` prefixes.  ``auto`` colours a stream that is a terminal, unless ``NO_COLOR`` is set and not
  empty (https://no-color.org); ``FORCE_COLOR`` set, not empty and not ``0`` colours even a pipe;
  ``NO_COLOR`` wins over ``FORCE_COLOR``; ``--color always|never`` wins over both.  Machine formats are never
  coloured.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import NamedTuple

import click

__all__ = [
    "COLOR_MODES",
    "Conventions",
    "current",
    "error_prefix",
    "info",
    "phase",
    "resolve_color",
    "say",
    "status_word",
    "warn",
]

COLOR_MODES = ("auto", "always", "never")
_KEY = "template_engine.conventions"

#: The colour of each status word of ``check`` (and of ``diff``'s markers).
_STATUS_COLORS = {"runnable": "green", "not runnable": "red", "error": "red"}


class Conventions(NamedTuple):
    """What the group's options asked for."""

    quiet: bool = False
    verbose: bool = False


def install(ctx: click.Context, conventions: Conventions, color: bool | None) -> None:
    """Record ``conventions`` on the group's context, and the colour decision (``None``: per stream, by
    whether it is a terminal) where every command's context inherits it."""
    ctx.meta[_KEY] = conventions
    ctx.color = color


def current() -> Conventions:
    """The conventions of the running command (the defaults outside one, as in a test calling a function)."""
    ctx = click.get_current_context(silent=True)
    found = ctx.find_root().meta.get(_KEY) if ctx is not None else None
    return found if isinstance(found, Conventions) else Conventions()


def resolve_color(mode: str, environ: Mapping[str, str]) -> bool | None:
    """``--color MODE`` as click's ``Context.color``: ``True`` always, ``False`` never, ``None`` for a stream
    that is a terminal (click asks each stream's ``isatty``).  See the module docstring for the variables."""
    if mode == "always":
        return True
    if mode == "never" or environ.get("NO_COLOR", ""):
        return False
    if environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    return None


def say(message: str = "", *, nl: bool = True) -> None:
    """A line of text output on standard output, unless quiet."""
    if not current().quiet:
        click.echo(message, nl=nl)


def warn(message: str) -> None:
    """``warning: message`` on standard error, unless quiet."""
    if not current().quiet:
        click.echo(f"{click.style('warning:', fg='yellow', bold=True)} {message}", err=True)


def error_prefix() -> str:
    """``error:``, in red where colour is on (click strips it where it is off)."""
    return click.style("error:", fg="red", bold=True)


def status_word(word: str, width: int = 0) -> str:
    """A status word of ``check`` padded to ``width`` and coloured (the padding is outside the colour, so
    columns line up whether or not the colour is kept)."""
    color = _STATUS_COLORS.get(word)
    padding = " " * max(0, width - len(word))
    return (click.style(word, fg=color, bold=True if word == "error" else None) if color else word) + padding


def info(message: str) -> None:
    """``info: message`` on standard error, when verbose."""
    if current().verbose:
        click.echo(f"info: {message}", err=True)


@contextmanager
def phase(name: str) -> Iterator[list[str]]:
    """Time the block when verbose, then say ``info: NAME in N ms`` followed by whatever the block appended
    to the list it is given (``: 18 pairs``).  Costs one clock reading when not verbose."""
    details: list[str] = []
    start = time.perf_counter()
    yield details
    if current().verbose:
        took = (time.perf_counter() - start) * 1000
        info(f"{name} in {took:.0f} ms" + (f" ({', '.join(details)})" if details else ""))
