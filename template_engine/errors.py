"""The exception family and the records it carries.

Every problem names where it was found (file, line, column, layer), the field path and what was expected, and
renders itself: a sentence, then indented context.  Callers branch on types and fields, never on text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from template_engine.paths import Path, format_path


@dataclass(frozen=True, slots=True)
class Location:
    """Where a value was written: a file relative to the templates root, with line/column when known."""

    file: str
    line: int | None = None
    column: int | None = None
    layer: str | None = None

    def __str__(self) -> str:
        text = self.file
        if self.line is not None:
            text += f":{self.line}"
            if self.column is not None:
                text += f":{self.column}"
        if self.layer:
            text += f" ({self.layer})"
        return text


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the input."""

    message: str
    path: Path = ()
    location: Location | None = None
    expected: str | None = None
    related: tuple[Location, ...] = field(default_factory=tuple)

    def render(self) -> str:
        lines = [self.message]
        if self.path:
            lines.append(f"    at: {format_path(self.path)}")
        if self.location is not None:
            lines.append(f"    in: {self.location}")
        for other in self.related:
            lines.append(f"   and: {other}")
        if self.expected:
            lines.append(f"    expected: {self.expected}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"message": self.message}
        if self.path:
            out["field"] = format_path(self.path)
        if self.location is not None:
            out["file"] = self.location.file
            if self.location.line is not None:
                out["line"] = self.location.line
            if self.location.layer:
                out["layer"] = self.location.layer
        if self.expected:
            out["expected"] = self.expected
        return out


class TemplateEngineError(Exception):
    """Base of every error the engine raises on bad input; carries one or more problems."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(p.render() for p in self.problems)


class InputError(TemplateEngineError):
    """A file could not be read, parsed or validated against the schema."""


class CompositionError(TemplateEngineError):
    """The layers are individually valid but cannot be composed (missing asset, master conflicts...)."""


class RenderError(TemplateEngineError):
    """A Jinja2 expression in a combined spec failed to render."""


class NotFoundError(TemplateEngineError):
    """An unknown department, project, template or asset was asked for."""
