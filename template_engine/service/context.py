"""One request's view of the service: a transaction, the caller's access, and the scopes it touches.

:meth:`Store.read` and :meth:`Store.write` open exactly one transaction per request: everything a request
reads and writes happens in it, and it commits only when the request's work is done (a failure rolls all
of it back, so there is never a partial write).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import Engine

from template_engine.org import SYSTEM, Scope, View
from template_engine.service.auth import Access, Principal, ScopeRef
from template_engine.service.errors import ApiError, field_error, not_found
from template_engine.service.ids import parse_id
from template_engine.service.storage.database import transaction
from template_engine.service.storage.repository import DepartmentRow, Lock, ProjectRow, Repository, scope_key

ScopeType = Literal["system", "department", "project"]


@dataclass(frozen=True, slots=True)
class Placement:
    """A scope with its rows: the system, a department, or a project (with its department)."""

    type: ScopeType
    department: DepartmentRow | None = None
    project: ProjectRow | None = None

    @property
    def id(self) -> int | None:
        if self.project is not None:
            return self.project.id
        return self.department.id if self.department is not None else None

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
        if self.type == "project" and self.project is not None:
            return Scope("project", self.project.name)
        if self.type == "department" and self.department is not None:
            return Scope("department", self.department.name)
        return SYSTEM

    def view(self) -> View:
        return View(
            self.department.name if self.department is not None else None,
            self.project.name if self.project is not None else None,
        )

    def chain_keys(self) -> list[str]:
        keys = ["system"]
        if self.department is not None:
            keys.append(scope_key("department", self.department.id))
        if self.project is not None:
            keys.append(scope_key("project", self.project.id))
        return keys

    def contains(self, other: Placement) -> bool:
        """Whether ``other`` is this scope or below it."""
        if self.type == "system":
            return True
        if self.type == "department":
            return (
                other.department is not None
                and self.department is not None
                and (other.department.id == self.department.id)
            )
        return other.project is not None and self.project is not None and other.project.id == self.project.id


@dataclass
class Ctx:
    """The repository of the request's transaction and the caller's access."""

    repo: Repository
    access: Access
    _departments: dict[int, DepartmentRow] = field(default_factory=dict)
    _projects: dict[int, ProjectRow] = field(default_factory=dict)

    @property
    def subject(self) -> str:
        return self.access.subject

    def department(self, department_id: int, lock: Lock = False) -> DepartmentRow:
        found = self._departments.get(department_id) if not lock else None
        if found is None:
            found = self.repo.department(department_id, lock=lock)
            if found is None:
                raise not_found(f"department {department_id}")
            self._departments[department_id] = found
        return found

    def project(self, project_id: int, lock: Lock = False) -> ProjectRow:
        found = self._projects.get(project_id) if not lock else None
        if found is None:
            found = self.repo.project(project_id, lock=lock)
            if found is None:
                raise not_found(f"project {project_id}")
            self._projects[project_id] = found
        return found

    def placement(self, scope_type: str, scope_id: int | None, lock: Lock = False) -> Placement:
        """The scope ``scope_type``/``scope_id`` (404 when the department or project does not exist)."""
        if scope_type == "system":
            return Placement("system")
        if scope_id is None:
            raise ApiError(500, "a scope without its id")  # the schema makes this impossible
        if scope_type == "department":
            return Placement("department", self.department(scope_id, lock=lock))
        project = self.project(scope_id, lock=lock)
        return Placement("project", self.department(project.department_id), project)

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
            project = repo.project_named(principal.project)
            department = repo.department(project.department_id) if project is not None else None
            return Access(principal, department.name if department is not None else None)
        return Access(principal, principal.department)
