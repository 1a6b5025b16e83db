"""The exception family and the records it carries.

Every problem names where it was found (file, line, column, layer), the field path and what was expected, and
renders itself: a sentence, then indented context.  A warning (:class:`CompositionWarning`) is a record too:
its kind, the replica and field it concerns and where it comes from.  Callers branch on types, kinds and
fields, never on text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from template_engine.paths import Path, format_path


@dataclass(frozen=True, slots=True)
class Location:
    """Where a value was written: a file relative to the templates root, with line/column when known.

    Every text form of a location is made here: :meth:`place` (``file:line``), :meth:`with_layer`
    (``file:line, layer``), ``str()`` (``file:line:column (layer)``, the ``in:`` line of a problem) and
    :meth:`to_dict` (``file``, ``line``, ``layer``, for JSON).
    """

    file: str
    line: int | None = None
    column: int | None = None
    layer: str | None = None
    #: The kind of the layer, as a value (``views.model.KINDS``' keys: ``system``, ``cluster``,
    #: ``department``, ``project``, ``template``, ``policy``...): what a page colours it by, never read back
    #: out of :attr:`layer`'s text.  Not part of equality: two places are the same place whatever names them.
    kind: str | None = field(default=None, compare=False)

    def place(self, column: bool = False) -> str:
        """``file:line`` (with ``column``: ``file:line:column``); the file alone when the line is unknown."""
        text = self.file
        if self.line is not None:
            text += f":{self.line}"
            if column and self.column is not None:
                text += f":{self.column}"
        return text

    def with_layer(self) -> str:
        """``departments/research/defaults.yaml:12, department research defaults``."""
        return f"{self.place()}, {self.layer}" if self.layer else self.place()

    def __str__(self) -> str:
        return self.place(column=True) + (f" ({self.layer})" if self.layer else "")

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"file": self.file}
        if self.line is not None:
            out["line"] = self.line
        if self.layer:
            out["layer"] = self.layer
        return out


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

    def with_expected(self) -> str:
        """``message (expected ...)``: the message, and what was expected when that is known."""
        return f"{self.message} (expected {self.expected})" if self.expected else self.message

    def field_line(self, path: Path | None = None) -> str:
        """``field: message (expected ...)``, the field named by ``path`` (by default the problem's own)."""
        field = format_path(self.path if path is None else path)
        return f"{field}: {self.with_expected()}" if field else self.with_expected()

    def one_line(self) -> str:
        """``file:line, layer: field: message`` (the parts that are known), for lists of problems."""
        where = self.location.with_layer() if self.location is not None else ""
        return ": ".join(part for part in (where, format_path(self.path), self.message) if part)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"message": self.message}
        if self.path:
            out["field"] = format_path(self.path)
        if self.location is not None:
            out.update(self.location.to_dict())
        if self.expected:
            out["expected"] = self.expected
        return out


#: Which combined spec a runnable issue or a warning concerns.
Replica = Literal["worker", "master", "leader"]


class WarningKind(Enum):
    """What a composition warns about.  A warning does not stop a composition or make it not runnable."""

    #: An exclusion names an item that no lower layer gives (a typo in its key?).
    UNMATCHED_EXCLUSION = "unmatched-exclusion"
    #: An exclusion that gives fields besides its key (a ``value``...): they are dropped with the item.
    EXCLUSION_WITH_FIELDS = "exclusion-with-fields"
    #: A field that only another distributed framework reads (``slotsPerWorker`` on PyTorch...).
    FRAMEWORK_IGNORES_FIELD = "framework-ignores-field"
    #: The template has a master section, but ``masterSpecSameAsWorker`` is true.
    MASTER_SECTION_IGNORED = "master-section-ignored"
    #: A department's defaults alone make a template without a master section run workers only.
    WORKERS_ONLY_BY_DEPARTMENT = "workers-only-by-department"
    #: A variable that no expression uses (a typo?); ``field`` is empty and ``variable`` names it.
    UNUSED_VARIABLE = "unused-variable"
    #: A field the cluster objects cannot hold (docs/cluster.md, "Not representable"): only the objects of
    #: ``manifests`` carry these warnings, never the composition's runnable answer.
    NOT_REPRESENTABLE = "not-representable"


@dataclass(frozen=True, slots=True)
class CompositionWarning:
    """Something suspicious about a composition: its kind, the replica and field it concerns, a sentence, and
    the file (and line) it comes from when there is one.

    ``message`` is the sentence alone; :meth:`render` adds the place (``... [file:line]``), as the CLI, the
    HTTP answers and the snapshots show it.  A merge does not know which replica it merges: its warnings say
    ``worker`` and the composition places the master's.
    """

    kind: WarningKind
    replica: Replica
    field: Path
    message: str
    location: Location | None = None
    #: The variable an :attr:`WarningKind.UNUSED_VARIABLE` warning is about.
    variable: str | None = None

    def field_text(self) -> str:
        """The field as text (``labels[name=tier]``); ``--var NAME`` for a variable."""
        return f"--var {self.variable}" if self.variable is not None else format_path(self.field)

    def render(self) -> str:
        """The sentence, then where it comes from: ``exclusion of ... matches nothing ... [file:line]``."""
        return f"{self.message} [{self.location.place()}]" if self.location is not None else self.message

    def one_line(self) -> str:
        """``field: message [file:line]``."""
        return ": ".join(part for part in (self.field_text(), self.render()) if part)

    def to_dict(self) -> dict[str, Any]:
        return {"replica": self.replica, "field": self.field_text(), "message": self.render()}


class InvalidAt(ValueError):
    """A model's own check that fails at one place inside the value it checks (the second entry of a list
    that names a node pool twice: ``(1, "nodePool", "id")``): where pydantic's errors become problems
    (:func:`~template_engine.loader.validate.placed`), ``path`` is added to the error's location."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


class TemplateEngineError(Exception):
    """Base of every error the engine raises on bad input; carries one or more problems."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(p.render() for p in self.problems)


class InputError(TemplateEngineError):
    """A file could not be read, parsed or validated against the schema."""


class TooLargeError(InputError):
    """A document holds more than its door's bound of values: read no further (a service door answers 413)."""


class CompositionError(TemplateEngineError):
    """The layers are individually valid but cannot be composed (missing asset, master conflicts...)."""


class RenderError(TemplateEngineError):
    """A Jinja2 expression in a combined spec failed to render."""


class NotFoundError(TemplateEngineError):
    """An unknown department, project, template or asset was asked for."""
