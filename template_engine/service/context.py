"""One request's view of the service: a transaction, the caller's access, and the scopes it touches.

:meth:`Store.read` and :meth:`Store.write` open exactly one transaction per request: everything a request
reads and writes happens in it, and it commits only when the request's work is done (a failure rolls all
of it back, so there is never a partial write).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from sqlalchemy import Engine

from template_engine.org import SYSTEM, Scope, View
from template_engine.scopes import DEPARTMENT_LEVEL, PROJECT_LEVEL, SYSTEM_LEVEL, ScopeLevel, ScopeType
from template_engine.service.auth import Access, Principal, ScopeRef
from template_engine.service.errors import ApiError, field_error, not_found
from template_engine.service.ids import parse_id
from template_engine.service.storage.database import transaction
from template_engine.service.storage.repository import (
    DEPARTMENTS,
    PROJECTS,
    UNIT_TABLES,
    DepartmentRow,
    Lock,
    ProjectRow,
    Repository,
    UnitTable,
    scope_key,
)

_U = TypeVar("_U", DepartmentRow, ProjectRow)

#: The levels the service serves, top first: the rows of :data:`template_engine.scopes.LEVELS` but the
#: cluster's (docs/decisions.md).  A :class:`Placement` has one field per named level, named after it.
SERVED_LEVELS: tuple[ScopeLevel, ...] = (SYSTEM_LEVEL, DEPARTMENT_LEVEL, PROJECT_LEVEL)
SERVED: dict[str, ScopeLevel] = {level.type: level for level in SERVED_LEVELS}
#: Each served level's position, top first.
_DEPTH: dict[str, int] = {level.type: depth for depth, level in enumerate(SERVED_LEVELS)}
_NAMED_TYPES = tuple(level.type for level in SERVED_LEVELS[1:])
#: The named levels at and above each served level (a :class:`Placement`'s fields that make it that scope).
_AT_AND_ABOVE = {level.type: _NAMED_TYPES[:depth] for depth, level in enumerate(SERVED_LEVELS)}


@dataclass(frozen=True, slots=True)
class Placement:
    """A scope with its rows: the system, a department, or a project (with its department); a row for each
    named level at and above the scope, in the field named after the level."""

    type: ScopeType
    department: DepartmentRow | None = None
    project: ProjectRow | None = None

    @property
    def own(self) -> DepartmentRow | ProjectRow | None:
        """The scope's own row (``None`` for the system)."""
        row: DepartmentRow | ProjectRow | None = getattr(self, self.type, None)
        return row

    @property
    def id(self) -> int | None:
        row = self.own
        return row.id if row is not None else None

    @property
    def key(self) -> str:
        return scope_key(self.type, self.id)

    @property
    def ref(self) -> ScopeRef:
        return ScopeRef(
            self.type,
            self.department.name if self.department is not None else None,
            self.project.name if self.project is not None else None,
        )

    def scope(self) -> Scope:
        row = self.own
        return Scope(self.type, row.name) if row is not None else SYSTEM

    def view(self) -> View:
        return View(
            self.department.name if self.department is not None else None,
            self.project.name if self.project is not None else None,
        )

    def chain_keys(self) -> list[str]:
        """The keys of the scopes a composition seen from here reads, top first."""
        keys = ["system"]
        for name in _NAMED_TYPES:
            row = getattr(self, name)
            if row is not None:
                keys.append(scope_key(name, row.id))
        return keys

    def contains(self, other: Placement) -> bool:
        """Whether ``other`` is this scope or below it: every row of this scope is also ``other``'s."""
        for name in _AT_AND_ABOVE[self.type]:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is None or theirs is None or mine.id != theirs.id:
                return False
        return True

    def parent(self) -> Placement:
        """The scope right above this one (the system's is itself)."""
        if self.type == SERVED_LEVELS[0].type:
            return self
        above = SERVED_LEVELS[_DEPTH[self.type] - 1].type
        return replace(self, type=above, **{self.type: None})

    def below(self, level: str, row: DepartmentRow | ProjectRow) -> Placement:
        """The scope of ``row``, a unit of ``level`` right below this scope."""
        return replace(self, type=level, **{level: row})  # type: ignore[arg-type]


@dataclass
class Ctx:
    """The repository of the request's transaction and the caller's access."""

    repo: Repository
    access: Access
    _units: dict[tuple[str, int], Any] = field(default_factory=dict)

    @property
    def subject(self) -> str:
        return self.access.subject

    def unit(self, table: UnitTable[_U], unit_id: int, lock: Lock = False) -> _U:
        """The unit ``unit_id`` of a level (404 when there is none); read once per request unless locked."""
        found: _U | None = self._units.get((table.type, unit_id)) if not lock else None
        if found is None:
            found = self.repo.unit(table, unit_id, lock=lock)
            if found is None:
                raise not_found(f"{table.type} {unit_id}")
            self._units[(table.type, unit_id)] = found
        return found

    def department(self, department_id: int, lock: Lock = False) -> DepartmentRow:
        return self.unit(DEPARTMENTS, department_id, lock)

    def project(self, project_id: int, lock: Lock = False) -> ProjectRow:
        return self.unit(PROJECTS, project_id, lock)

    def placement(self, scope_type: str, scope_id: int | None, lock: Lock = False) -> Placement:
        """The scope ``scope_type``/``scope_id`` (404 when the department or project does not exist): the
        unit's row, locked with ``lock``, below its parent's placement."""
        if not SERVED[scope_type].named:
            return Placement("system")
        if scope_id is None:
            raise ApiError(500, "a scope without its id")  # the schema makes this impossible
        table = UNIT_TABLES[scope_type]
        row = self.unit(table, scope_id, lock=lock)
        above = SERVED_LEVELS[_DEPTH[scope_type] - 1].type
        parent = self.placement(above, getattr(row, table.parent)) if table.parent else Placement("system")
        return parent.below(scope_type, row)

    def project_placement(self, project_id: str | int, field_name: str, lock: Lock = False) -> Placement:
        """The placement of the project a query or body field names; an unknown one is a 400 on it."""
        number = parse_id(project_id, field_name)
        try:
            return self.placement("project", number, lock=lock)
        except ApiError as exc:
            if exc.status == 404:
                raise field_error((field_name,), f"unknown project {project_id!r}") from None
            raise


class Store:
    """The database behind the service."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def read(self, principal: Principal) -> Iterator[Ctx]:
        with transaction(self.engine, write=False) as connection:
            repo = Repository(connection)
            yield Ctx(repo, self._access(principal, repo))

    @contextmanager
    def write(self, principal: Principal) -> Iterator[Ctx]:
        with transaction(self.engine, write=True) as connection:
            repo = Repository(connection)
            yield Ctx(repo, self._access(principal, repo))

    @staticmethod
    def _access(principal: Principal, repo: Repository) -> Access:
        if principal.role == "project-editor" and principal.project is not None:
            project = repo.unit_named(PROJECTS, principal.project)
            department = repo.unit(DEPARTMENTS, project.department_id) if project is not None else None
            return Access(principal, department.name if department is not None else None)
        return Access(principal, principal.department)
