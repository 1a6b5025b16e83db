"""The records the CI formats are written from: one finding per issue, one result per (project, template)
pair, and the whole check.  Plain values, made from the engine's records by :mod:`.findings`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from template_engine.errors import Location
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME

#: How bad a finding is: ``error`` fails ``check`` (exit 1), ``warning`` does not.
Level = Literal["error", "warning"]
#: A pair's status as ``check`` says it: ``error`` when it did not compose.
Status = Literal["runnable", "not runnable", "error"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One issue, problem or warning: its rule id (:mod:`.rules`), sentence and where it is.

    ``location`` is where the offending value is written (a file relative to the templates folder, with its
    line and column when known); ``related`` are other places that explain it (the policy rule broken).
    """

    rule: str
    message: str
    level: Level = "error"
    field: str | None = None
    replica: str | None = None
    location: Location | None = None
    related: tuple[Location, ...] = ()

    def place(self) -> str:
        """``file:line`` (the file alone without a line; empty when nowhere is known)."""
        return self.location.place() if self.location is not None else ""

    def one_line(self) -> str:
        """``file:line: replica field: message`` with the parts that are known."""
        what = " ".join(part for part in (self.replica or "", self.field or "") if part)
        return ": ".join(part for part in (self.place(), what, self.message) if part)


@dataclass(frozen=True, slots=True)
class JobRef:
    """The pair's job object (the first of its cluster objects), as a Kubernetes object reference."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class PairResult:
    """One (project, template) pair of ``check``; a department or system view has no project."""

    project: str | None
    department: str | None
    template: str
    #: The template's own scope, as ``check`` prints it (``department research``).
    scope: str
    status: Status
    #: What makes it not runnable (or stopped its composition): every one is an ``error``.
    findings: tuple[Finding, ...] = ()
    warnings: tuple[Finding, ...] = ()
    job: JobRef | None = None
    #: The namespace the project's workloads run in (the cluster settings' ``namespacePattern``).
    namespace: str | None = None
    #: The name of the template's workload kind (``None``: its file is invalid, its kind unknown).
    kind: str | None = DISTRIBUTED.name

    @property
    def view(self) -> str:
        """``nlp``, ``(research)`` or ``(system)``: the view the pair is seen from, as ``check`` shows it."""
        if self.project is not None:
            return self.project
        return f"({self.department})" if self.department is not None else "(system)"

    @property
    def name(self) -> str:
        """``nlp / train``: the pair's id in every format, whatever its kind (a template's name is unique in
        its scope across the kinds)."""
        return f"{self.view} / {self.template}"

    @property
    def workload_type(self) -> str | None:
        """Run:ai's ``workloadType`` of the pair's kind, for a pair that is not a distributed training (whose
        records stay as they were before the kinds: ``None``), or whose kind is unknown."""
        if self.kind is None or self.kind == DISTRIBUTED.name:
            return None
        return KIND_BY_NAME[self.kind].workload_type

    @property
    def title(self) -> str:
        """:attr:`name`, with the kind after it when the pair is not a distributed training: ``nlp / serve
        (inference)``; what a sentence about the pair calls it."""
        return f"{self.name} ({self.kind})" if self.workload_type is not None else self.name


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Everything ``check`` found: its pairs and the problems of the org's other files."""

    pairs: tuple[PairResult, ...]
    problems: tuple[Finding, ...] = ()
    #: The templates folder as the command was given it (POSIX), so that a file's URI is relative to the
    #: directory the command ran in (a repository's root in CI).
    base: str = "templates"

    def uri(self, location: Location) -> str:
        """The file of ``location`` as a POSIX path from the directory the command ran in."""
        base = self.base.rstrip("/")
        if base in ("", "."):
            return location.file
        return f"{base.removeprefix('./')}/{location.file}"

    @property
    def failed(self) -> bool:
        """What exits 1: a pair that is not runnable, or a problem in the org."""
        return bool(self.problems) or any(p.status != "runnable" for p in self.pairs)


__all__ = ["CheckReport", "Finding", "JobRef", "Level", "PairResult", "Status"]
