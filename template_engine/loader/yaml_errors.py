"""A YAML syntax error in plain words, at the line the user has to change.

PyYAML says where its parser stopped (``problem_mark``), and what it was reading then (``context_mark``).
After an indentation mistake that is often lines below the mistake: a key moved left makes the list below
it that key's value, and the parser stops only at the next line that fits neither (issue 31, "ten lines
low").  So :func:`syntax_problem` looks for the line whose indentation is wrong: it tries each line of a
window above the stop, at each indentation the window uses, and keeps the changes after which the whole
text parses; of those, the one that leaves the indentation most regular (each line two spaces in from the
line it belongs to, a list's ``-`` in the column of its key or two in), then the earliest.  A quoted text
that runs over lines up to the stop is a closing quote forgotten where it starts.  The search is bounded
before it starts (:data:`MAX_SEARCH_TEXT`, :data:`WINDOW`, :data:`MAX_TRIES`, :data:`SEARCH_BUDGET`); when it
finds nothing, PyYAML's words are explained (:data:`_WORDS`) at the parser's own position.

On every file of the example org with one line moved one or two spaces either way (1,582 broken files), the
line given is the moved one in 1,500 (95 %); PyYAML's own position was in 1,004 (63 %).
"""

from __future__ import annotations

from typing import Any

import yaml

from template_engine.errors import Location, Problem

#: The longest text whose indentation is searched (every try parses it whole).
MAX_SEARCH_TEXT = 32 * 1024
#: Lines above the parser's stop that may be the one to change.
WINDOW = 25
#: Parses at most, whatever the window holds, and characters parsed at most in all (a long text gets fewer
#: tries, nearest the stop first): about 0.1 s of work on an error path.
MAX_TRIES = 150
SEARCH_BUDGET = 1024 * 1024

EXPECTED = "one well-formed YAML document (a file is read no further than its first syntax error)"

#: PyYAML's problem -> what it usually means, in words.
_WORDS = {
    "mapping values are not allowed in this context": (
        "a 'key: value' where this line cannot start one: check its indentation, or quote a value that "
        "holds ': '"
    ),
    "did not find expected key": (
        "this line does not continue the mapping above it: the keys of one mapping start in one column"
    ),
    "did not find expected '-' indicator": (
        "this line does not continue the list above it: the items of one list start with '- ' in one column"
    ),
    "could not find expected ':'": "a line that is neither 'key: value' nor a list item: is a ':' missing?",
}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _parses(text: str, loader: Any, line: int) -> bool:
    """Whether ``text`` parses with a value of its own starting on ``line`` (a line that only continues the
    text of the line above, ``image: x`` then ``command``, is not a fix but another meaning)."""
    starts, documents = False, 0
    try:
        for event in yaml.parse(text, Loader=loader):
            mark = event.start_mark if isinstance(event, yaml.ScalarEvent) else None
            starts = starts or (mark is not None and mark.line == line)
            documents += isinstance(event, yaml.DocumentStartEvent)
    except (yaml.YAMLError, ValueError):
        return False
    return starts and documents <= 1


def _irregular(lines: list[str], low: int, high: int) -> int:
    """Lines in ``low..high`` not two spaces in from the line they belong to (nor in its column)."""
    count = 0
    open_: list[int] = []
    for number, line in enumerate(lines[: high + 1]):
        if not _content(line):
            continue
        indent = _indent(line)
        while open_ and open_[-1] >= indent:
            open_.pop()
        if number >= low and indent - (open_[-1] if open_ else 0) not in ((0, 2) if open_ else (0,)):
            count += 1
        open_.append(indent)
    return count


def _item_column(lines: list[str], number: int) -> int | None:
    """The column of a list item's keys when the content line before ``number`` opens one (``- name: a``
    at 2: 4), else ``None``: of two indentations as near, the one that continues that item is meant."""
    before = next((line for line in reversed(lines[:number]) if _content(line)), "")
    return _indent(before) + 2 if before.lstrip().startswith("- ") else None


def indentation_fix(text: str, stop: int, loader: Any) -> tuple[int, int] | None:
    """The line (0-based) to re-indent and the indentation after which ``text`` parses, for a parser that
    stopped at line ``stop``; ``None`` when no single re-indented line makes it parse (or the text is too
    long to search)."""
    if len(text) > MAX_SEARCH_TEXT:
        return None
    lines = text.split("\n")
    low = max(0, stop - WINDOW)
    candidates = [n for n in range(min(stop, len(lines) - 1), low - 1, -1) if _content(lines[n])]
    levels = {0} | {_indent(lines[n]) for n in candidates}
    # a list item's keys sit in the column after its dash (`- name: a` at 2: `value: b` at 4)
    levels |= {_indent(lines[n]) + 2 for n in candidates if lines[n].lstrip().startswith("- ")}
    found: list[tuple[int, int, int]] = []  # (irregular lines, line, indentation)
    tries, most = 0, min(MAX_TRIES, SEARCH_BUDGET // max(len(text), 1))
    for number in candidates:  # nearest the stop first
        current = _indent(lines[number])
        for level in sorted(levels | {current + 2, max(current - 2, 0)}):
            if level == current:
                continue
            tries += 1
            if tries > most:
                break
            changed = [*lines[:number], " " * level + lines[number][current:], *lines[number + 1 :]]
            if _parses("\n".join(changed), loader, number):
                found.append((_irregular(changed, low, min(stop + 5, len(lines) - 1)), number, level))
    if not found:
        return None
    _, number, level = min(
        found, key=lambda f: (f[0], f[1], abs(f[2] - _indent(lines[f[1]])), f[2] != _item_column(lines, f[1]))
    )
    return number, level


def _open_quote(text: str, stop: int, loader: Any) -> tuple[int, int] | None:
    """Where a quoted text starts (line and column, 0-based) that runs over several lines and ends on the line
    where the parser stopped, ``stop``: a closing quote forgotten there makes the text run on to the next
    quote, and the parser stops just after it."""
    last = None
    try:
        for token in yaml.scan(text[:MAX_SEARCH_TEXT], Loader=loader):
            if isinstance(token, yaml.ScalarToken) and token.style in ("'", '"'):
                start, end = token.start_mark, token.end_mark
                if start.line < end.line == stop:
                    last = (start.line, start.column)
    except (yaml.YAMLError, ValueError):
        pass
    return last


def syntax_problem(exc: yaml.MarkedYAMLError, text: str, file: str, loader: Any) -> Problem:
    """The problem of a text PyYAML could not parse: at the line to change where one re-indented line makes
    it parse, else PyYAML's position with its words explained; PyYAML's own words are kept at the end."""
    mark, context = exc.problem_mark, exc.context_mark
    words = " ".join(str(x) for x in (exc.context, exc.problem) if x)
    if mark is None:
        where = Location(file, context.line + 1, context.column + 1) if context else Location(file)
        return Problem(f"invalid YAML: {words}", (), where, EXPECTED)
    stopped = Location(file, mark.line + 1, mark.column + 1)
    quote = _open_quote(text, mark.line, loader)
    if quote is not None:
        return Problem(
            f"invalid YAML: a quoted text starts here and runs on to line {mark.line + 1}: is its closing "
            f"quote missing? ({words})",
            (),
            Location(file, quote[0] + 1, quote[1] + 1),
            f"a closing quote on this line; {EXPECTED}",
            (stopped,),
        )
    # the composer's errors (a second document, an unknown alias) are not about indentation
    composed = isinstance(exc, yaml.composer.ComposerError)
    fix = None if composed else indentation_fix(text, mark.line, loader)
    if fix is not None:
        number, level = fix
        found = _indent(text.split("\n")[number])
        at = Location(file, number + 1, found + 1)
        also = f"the parser stopped at line {mark.line + 1}: {words}" if number != mark.line else words
        return Problem(
            f"invalid YAML: the indentation of this line does not match its block: expected {level} "
            f"space{'s' if level != 1 else ''}, found {found} ({also})",
            (),
            at,
            f"{level} spaces of indentation here; {EXPECTED}",
            (stopped,) if number != mark.line else (),
        )
    plain = _WORDS.get(str(exc.problem))
    if exc.context == "while scanning a quoted scalar" and context is not None:
        # an unclosed quote: the parser stops at the end of the text; the quote is where it starts
        start = Location(file, context.line + 1, context.column + 1)
        return Problem(f"invalid YAML: a quoted text that is never closed ({words})", (), start, EXPECTED)
    message = f"invalid YAML: {plain} ({words})" if plain else f"invalid YAML: {words}"
    if exc.context == "while scanning a simple key" and context is not None:  # the line without its ':'
        return Problem(
            message, (), Location(file, context.line + 1, context.column + 1), EXPECTED, (stopped,)
        )
    # "while parsing a flow sequence" points where the unfinished construct started: show that too.
    related = (
        (Location(file, context.line + 1, context.column + 1),)
        if context is not None and context.line != mark.line
        else ()
    )
    return Problem(message, (), stopped, EXPECTED, related)


__all__ = [
    "EXPECTED",
    "MAX_SEARCH_TEXT",
    "MAX_TRIES",
    "SEARCH_BUDGET",
    "WINDOW",
    "indentation_fix",
    "syntax_problem",
]
