"""Bearer tokens, their role bindings, and who may read or change what.

Tokens come from a YAML file (``--auth-file`` / ``TEMPLATE_ENGINE_AUTH_FILE``)::

    tokens:
      - {subject: alice, token: dev-admin, role: system-admin}
      - {subject: bob, sha256: "<hex>", role: department-admin, department: research}
      - {subject: carol, token: dev-vision, role: project-editor, project: vision}
      - {subject: dave, token: dev-viewer, role: viewer}

A request with more than one ``Authorization`` header is refused (400), whatever they hold.

Only SHA-256 digests are kept in memory: a presented token is hashed and compared with every entry's digest
with :func:`hmac.compare_digest` (no early exit, equal lengths), and no token or digest is ever logged or put
in an error message.  Bindings name departments and projects by name.

Roles (DESIGN: a system admin may do everything; a department admin of D manages D, its projects and their
templates, defaults and workloads, and reads the system scope; a project editor of P manages P's templates,
defaults and workloads and reads the scopes above; a viewer reads):

==================  ====================================  ==========================================
role                reads                                 changes
==================  ====================================  ==========================================
system-admin        everything                            everything
department-admin D  system, D, D's projects, assets       D's and its projects' defaults, templates,
                                                          workloads; creates/renames/deletes D's projects
project-editor P    system, P's department, P, assets     P's defaults, templates, workloads
viewer              everything                            nothing
==================  ====================================  ==========================================
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from template_engine.errors import InputError
from template_engine.loader.yaml_safe import load_yaml
from template_engine.service.errors import ApiError

Role = Literal["system-admin", "department-admin", "project-editor", "viewer"]
ScopeType = Literal["system", "department", "project"]


class AuthFileError(Exception):
    """The auth file cannot be used; the message never contains a token."""


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: str = Field(min_length=1, max_length=253)
    token: str | None = Field(default=None, min_length=1)
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$")
    role: Role
    department: str | None = Field(default=None, min_length=1)
    project: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> _Entry:
        if (self.token is None) == (self.sha256 is None):
            raise ValueError("give exactly one of token and sha256")
        if (self.role == "department-admin") != (self.department is not None):
            raise ValueError("department goes with role department-admin, and only with it")
        if (self.role == "project-editor") != (self.project is not None):
            raise ValueError("project goes with role project-editor, and only with it")
        return self


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tokens: list[_Entry] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the subject (recorded in ``createdBy``/``updatedBy``) and the role binding."""

    subject: str
    role: Role
    department: str | None = None
    project: str | None = None


@dataclass(frozen=True, slots=True)
class ScopeRef:
    """A scope by names: ``department`` is the department of a project scope as well."""

    type: ScopeType
    department: str | None = None
    project: str | None = None


SYSTEM = ScopeRef("system")

#: The development tokens of ``serve --dev`` (docs/http-api.md); never for a shared deployment.
DEV_TOKENS: tuple[tuple[str, str, Principal], ...] = (
    ("alice", "dev-admin", Principal("alice", "system-admin")),
    ("bob", "dev-research", Principal("bob", "department-admin", department="research")),
    ("carol", "dev-vision", Principal("carol", "project-editor", project="vision")),
    ("dave", "dev-viewer", Principal("dave", "viewer")),
)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class Authenticator:
    """Finds the principal of a presented token, in time independent of which entry (if any) matches."""

    def __init__(self, entries: list[tuple[bytes, Principal]]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    def authenticate(self, token: str) -> Principal | None:
        presented = _digest(token)
        found: Principal | None = None
        for digest, principal in self._entries:
            if hmac.compare_digest(digest, presented) and found is None:
                found = principal
        return found

    @classmethod
    def development(cls) -> Authenticator:
        return cls([(_digest(token), principal) for _, token, principal in DEV_TOKENS])

    @classmethod
    def from_file(cls, path: Path) -> Authenticator:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthFileError(
                f"cannot read the auth file {str(path)!r}: {exc.__class__.__name__}"
            ) from None
        try:
            data = load_yaml(text, str(path)).data
        except InputError as exc:
            raise AuthFileError(f"the auth file {str(path)!r} is not valid YAML:\n{exc.render()}") from None
        try:
            parsed = _File.model_validate(data if data is not None else {})
        except ValidationError as exc:
            # Never echo the input: it may hold a token.
            lines = [
                f"  tokens{''.join(f'[{p}]' if isinstance(p, int) else f'.{p}' for p in e['loc'][1:])}: "
                f"{e['msg']}"
                for e in exc.errors(include_url=False, include_input=False)
            ]
            raise AuthFileError(f"the auth file {str(path)!r} is not valid:\n" + "\n".join(lines)) from None
        entries: list[tuple[bytes, Principal]] = []
        seen: set[bytes] = set()
        for index, entry in enumerate(parsed.tokens):
            digest = _digest(entry.token) if entry.token is not None else bytes.fromhex(entry.sha256 or "")
            if digest in seen:
                raise AuthFileError(f"the auth file {str(path)!r}: tokens[{index}] repeats an earlier token")
            seen.add(digest)
            entries.append((digest, Principal(entry.subject, entry.role, entry.department, entry.project)))
        return cls(entries)


# -- access rules -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Access:
    """A principal with its department resolved (a project editor's is its project's department)."""

    principal: Principal
    department: str | None

    @property
    def subject(self) -> str:
        return self.principal.subject

    @property
    def is_admin(self) -> bool:
        return self.principal.role == "system-admin"

    def can_read(self, scope: ScopeRef) -> bool:
        role = self.principal.role
        if role in ("system-admin", "viewer") or scope.type == "system":
            return True
        if scope.department is None or scope.department != self.department:
            return False
        if role == "department-admin" or scope.type == "department":
            return True
        return scope.project == self.principal.project

    def can_write(self, scope: ScopeRef) -> bool:
        role = self.principal.role
        if role == "system-admin":
            return True
        if role == "department-admin":
            return scope.type != "system" and scope.department == self.department
        if role == "project-editor":
            return scope.type == "project" and scope.project == self.principal.project
        return False

    def can_manage_projects(self, department: str) -> bool:
        """Create, rename or delete the projects of ``department``."""
        role = self.principal.role
        return role == "system-admin" or (role == "department-admin" and department == self.department)

    def require_read(self, scope: ScopeRef) -> None:
        require(self.can_read(scope))

    def require_write(self, scope: ScopeRef) -> None:
        require(self.can_write(scope))

    def require_admin(self) -> None:
        require(self.is_admin)


def require(allowed: bool) -> None:
    if not allowed:
        raise ApiError(403)


# -- the FastAPI dependency ---------------------------------------------------------------------------------

_bearer = HTTPBearer(auto_error=False, description="A token from the auth file (--auth-file).")
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def authenticate(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    given = len(request.headers.getlist("authorization"))
    if given > 1:  # which one counts would depend on the proxy in front: refuse rather than pick one
        raise ApiError(
            400, f"Authorization is given {given} times: send exactly one Authorization: Bearer <token>."
        )
    if credentials is None or not credentials.credentials:
        raise ApiError(401, "Authorization: Bearer <token> is required.", headers=_CHALLENGE)
    authenticator: Authenticator = request.app.state.authenticator
    principal = authenticator.authenticate(credentials.credentials)
    if principal is None:
        raise ApiError(401, headers=_CHALLENGE)
    return principal
