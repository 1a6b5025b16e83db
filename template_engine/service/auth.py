"""Bearer tokens, their role bindings, and who may read or change what.

Tokens come from a YAML file (``--auth-file`` / ``TEMPLATE_ENGINE_AUTH_FILE``)::

    tokens:
      - {subject: alice, token: dev-admin, role: system-admin}
      - {subject: bob, sha256: "<hex>", role: department-admin, department: research}
      - {subject: carol, token: dev-vision, role: project-editor, project: vision}
      - {subject: dave, token: dev-viewer, role: viewer}

Applications log in with client credentials (``POST /api/v1/token``, as Run:ai's SDK does) and get
short-lived bearer tokens the service signs (:mod:`.tokens`); the auth file lists them with the SHA-256 of
their secret and the key the tokens are signed with::

    signingKey: "<at least 32 characters>"      # required with applications; the same on every replica
    tokenLifetime: 3600                          # seconds, 300 to 86400 (default 3600)
    applications:
      - {clientId: ci-pipeline, sha256: "<hex of the secret>", role: project-editor, project: vision}

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
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from template_engine.errors import InputError
from template_engine.loader.yaml_safe import load_yaml
from template_engine.scopes import NAMED_LEVELS, ScopeType, depth
from template_engine.service.errors import ApiError
from template_engine.service.tokens import (
    DEFAULT_LIFETIME,
    MAX_LIFETIME,
    MIN_KEY_LENGTH,
    MIN_LIFETIME,
    Signer,
)

Role = Literal["system-admin", "cluster-admin", "department-admin", "project-editor", "viewer"]
#: The scope level each role is bound to (``None``: the whole org); the binding's field has the level's name.
ROLE_LEVEL: dict[str, str | None] = {
    "system-admin": None,
    "cluster-admin": "cluster",
    "department-admin": "department",
    "project-editor": "project",
    "viewer": None,
}


def _binding_problem(role: str, given: dict[str, str | None]) -> str | None:
    """Why a role binding's fields do not fit its role: the role's level's field, and only it."""
    wanted = ROLE_LEVEL[role]
    if wanted is not None and given.get(wanted) is None:
        return f"role {role} needs {wanted}: the name of the {wanted} it is bound to"
    for field, value in given.items():
        if value is not None and field != wanted:
            return f"{field} goes with role {_ROLE_OF[field]}, and only with it"
    return None


_ROLE_OF = {level: role for role, level in ROLE_LEVEL.items() if level is not None}


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
    cluster: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> _Entry:
        if (self.token is None) == (self.sha256 is None):
            raise ValueError("give exactly one of token and sha256")
        given = {"cluster": self.cluster, "department": self.department, "project": self.project}
        problem = _binding_problem(self.role, given)
        if problem is not None:
            raise ValueError(problem)
        return self


class _Application(BaseModel):
    """An application: its client id, the SHA-256 of its secret, and a role binding as for tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    clientId: str = Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]*$")
    sha256: str = Field(pattern=r"^[0-9a-fA-F]{64}$")
    role: Role
    department: str | None = Field(default=None, min_length=1)
    project: str | None = Field(default=None, min_length=1)
    cluster: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> _Application:
        given = {"cluster": self.cluster, "department": self.department, "project": self.project}
        problem = _binding_problem(self.role, given)
        if problem is not None:
            raise ValueError(problem)
        return self


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tokens: list[_Entry] = Field(default_factory=list)
    applications: list[_Application] = Field(default_factory=list)
    signingKey: str | None = Field(default=None, min_length=MIN_KEY_LENGTH)
    tokenLifetime: int = Field(default=DEFAULT_LIFETIME, ge=MIN_LIFETIME, le=MAX_LIFETIME)

    @model_validator(mode="after")
    def _key(self) -> _File:
        if self.applications and self.signingKey is None:
            raise ValueError(
                f"applications need signingKey (at least {MIN_KEY_LENGTH} characters) to sign their tokens"
            )
        return self


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the subject (recorded in ``createdBy``/``updatedBy``) and the role binding."""

    subject: str
    role: Role
    department: str | None = None
    project: str | None = None
    #: The cluster of a cluster admin.
    cluster: str | None = None

    @property
    def level(self) -> str | None:
        """The scope level the role is bound to (``None``: the whole org)."""
        return ROLE_LEVEL[self.role]

    @property
    def bound_to(self) -> str | None:
        """The name of the unit the role is bound to."""
        return getattr(self, self.level) if self.level is not None else None


@dataclass(frozen=True, slots=True)
class ScopeRef:
    """A scope by names, one field per named level of the scope table: a project scope names its department
    (and cluster) as well."""

    type: ScopeType
    department: str | None = None
    project: str | None = None
    cluster: str | None = None

    def at(self, level: str) -> str | None:
        """The name this scope has at ``level`` (``None``: it is above that level, or the level is absent)."""
        return getattr(self, level) if level in _NAMED else None

    def within(self, other: ScopeRef) -> bool:
        """Whether this scope is ``other`` or below it, by the scope table: at ``other``'s own level the
        names are the same."""
        if other.type == "system":
            return True
        return depth(self.type) >= depth(other.type) and self.at(other.type) == other.at(other.type)


_NAMED = frozenset(level.type for level in NAMED_LEVELS)


SYSTEM = ScopeRef("system")

#: The development tokens of ``serve --dev`` (docs/http-api.md); never for a shared deployment.
DEV_TOKENS: tuple[tuple[str, str, Principal], ...] = (
    ("alice", "dev-admin", Principal("alice", "system-admin")),
    ("bob", "dev-research", Principal("bob", "department-admin", department="research")),
    ("carol", "dev-vision", Principal("carol", "project-editor", project="vision")),
    ("dave", "dev-viewer", Principal("dave", "viewer")),
)
#: The development application of ``serve --dev``: client id, secret, binding.
DEV_APPLICATION = ("dev-client", "dev-secret", Principal("dev-client", "system-admin"))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def _credential_ref(kind: bytes, name: bytes) -> str:
    """What a UI session records of the credential it was opened with: a digest that names an auth-file
    token (by its SHA-256, hashed again) or an application (by its client id), and gives neither."""
    return hashlib.sha256(b"template-engine session credential\0" + kind + b"\0" + name).hexdigest()


@dataclass(frozen=True, slots=True)
class Credential:
    """A token that signs in: its principal, a digest naming it (:func:`_credential_ref`) and, for an
    application's token, when it expires (seconds since the epoch; ``None``: an auth-file token)."""

    principal: Principal
    ref: str
    expires: int | None


#: Compared with when a client id is unknown, so that a login takes the same time either way.
_NO_SECRET = _digest(secrets.token_hex(16))


def _now() -> int:
    return int(time.time())


class Authenticator:
    """Finds the principal of a presented token, in time independent of which entry (if any) matches, and
    logs applications in."""

    def __init__(
        self,
        entries: list[tuple[bytes, Principal]],
        applications: dict[str, tuple[bytes, Principal]] | None = None,
        signer: Signer | None = None,
    ) -> None:
        self._entries = entries
        self._applications = applications or {}
        self._signer = signer
        # Who holds each credential a session may name (first entry wins, as in :meth:`authenticate`).
        self._holders: dict[str, Principal] = {}
        for digest, principal in entries:
            self._holders.setdefault(_credential_ref(b"token", digest), principal)
        for client_id, (_, principal) in self._applications.items():
            self._holders[_credential_ref(b"application", client_id.encode("utf-8"))] = principal

    def __len__(self) -> int:
        return len(self._entries)

    def authenticate(self, token: str, now: int | None = None) -> Principal | None:
        """The principal of a token of the auth file, or of a valid token issued to one of its
        applications."""
        if self._signer is not None and token.count(".") == 2:
            claims = self._signer.verify(token, _now() if now is None else now)
            if claims is not None:
                if Signer.expired(claims, _now() if now is None else now):
                    return None
                application = self._applications.get(claims.subject)
                return application[1] if application is not None else None
        presented = _digest(token)
        found: Principal | None = None
        for digest, principal in self._entries:
            if hmac.compare_digest(digest, presented) and found is None:
                found = principal
        return found

    def sign_in(self, token: str, now: int | None = None) -> Credential | None:
        """The credential of a token that is valid at ``now`` (:meth:`authenticate`), for a UI session; the
        session keeps its :attr:`~Credential.ref`, never the token."""
        at = _now() if now is None else now
        principal = self.authenticate(token, at)
        if principal is None:
            return None
        if self._signer is not None and token.count(".") == 2:
            claims = self._signer.verify(token, at)
            if claims is not None:
                ref = _credential_ref(b"application", claims.subject.encode("utf-8"))
                return Credential(principal, ref, claims.expires)
        return Credential(principal, _credential_ref(b"token", _digest(token)), None)

    def holder(self, ref: str) -> Principal | None:
        """Who holds the credential ``ref`` names now: ``None`` once its token has left the auth file, or
        its application has (a session opened with it then ends)."""
        return self._holders.get(ref)

    def expired(self, token: str, now: int | None = None) -> bool:
        """Whether ``token`` is one this service issued that has expired."""
        if self._signer is None or token.count(".") != 2:
            return False
        claims = self._signer.verify(token, _now() if now is None else now)
        return claims is not None and Signer.expired(claims, _now() if now is None else now)

    def login(self, client_id: str, secret: str, now: int | None = None) -> tuple[str, int] | None:
        """A token and its lifetime (seconds) for an application's client credentials; ``None`` when they
        are wrong (in time independent of whether the client id exists)."""
        application = self._applications.get(client_id)
        stored = application[0] if application is not None else _NO_SECRET
        matches = hmac.compare_digest(stored, _digest(secret))
        if application is None or not matches or self._signer is None:
            return None
        token = self._signer.issue(client_id, _now() if now is None else now)
        return token, self._signer.lifetime

    @classmethod
    def development(cls) -> Authenticator:
        client_id, secret, principal = DEV_APPLICATION
        return cls(
            [(_digest(token), principal) for _, token, principal in DEV_TOKENS],
            {client_id: (_digest(secret), principal)},
            Signer(secrets.token_bytes(32)),
        )

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
                f"  {_where(e['loc'])}: {e['msg']}"
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
            principal = Principal(entry.subject, entry.role, entry.department, entry.project, entry.cluster)
            entries.append((digest, principal))
        applications: dict[str, tuple[bytes, Principal]] = {}
        for index, app in enumerate(parsed.applications):
            if app.clientId in applications:
                raise AuthFileError(
                    f"the auth file {str(path)!r}: applications[{index}] repeats the client id "
                    f"{app.clientId!r}"
                )
            principal = Principal(app.clientId, app.role, app.department, app.project, app.cluster)
            applications[app.clientId] = (bytes.fromhex(app.sha256), principal)
        signer = (
            Signer(parsed.signingKey.encode("utf-8"), parsed.tokenLifetime) if parsed.signingKey else None
        )
        return cls(entries, applications, signer)


def _where(loc: tuple[int | str, ...]) -> str:
    """``tokens[0].role`` for pydantic's ``('tokens', 0, 'role')``."""
    where = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(loc))
    return where or "the file"


# -- access rules -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Access:
    """A principal with the scope its role is bound to resolved (:attr:`binding`: a project editor's project
    with its department and cluster, a department admin's department with its cluster, a cluster admin's
    cluster; the system for the others).  Every decision reads the scope table (:meth:`ScopeRef.within`):
    a bound role reads its scope, every scope above it and (an admin) every scope below it, and writes its
    scope and the scopes below it."""

    principal: Principal
    #: The department of a department admin or project editor (its project's), as before the scope table.
    department: str | None
    #: The scope the role is bound to, with the names above it (``None``: the principal's own names).
    resolved: ScopeRef | None = None

    @property
    def binding(self) -> ScopeRef:
        """The scope the role is bound to: as resolved against the database, or as the principal names it."""
        if self.resolved is not None:
            return self.resolved
        principal, level = self.principal, self.principal.level
        if level is None:
            return ScopeRef("system")
        return ScopeRef(level, self.department, principal.project, principal.cluster)  # type: ignore[arg-type]

    @property
    def subject(self) -> str:
        return self.principal.subject

    @property
    def is_admin(self) -> bool:
        return self.principal.role == "system-admin"

    @property
    def _manages(self) -> bool:
        return self.principal.role.endswith("-admin")

    def can_read(self, scope: ScopeRef) -> bool:
        if self.principal.level is None:
            return True  # system admins and viewers read everything
        return self.binding.within(scope) or (self._manages and scope.within(self.binding))

    def can_write(self, scope: ScopeRef) -> bool:
        if self.principal.role == "viewer":
            return False
        return scope.within(self.binding)

    def may_manage(self, level: str) -> bool:
        """Whether the role manages units of ``level`` anywhere: an admin bound above the level."""
        bound = self.principal.level
        return self._manages and (bound is None or depth(bound) < depth(level))

    def can_manage_units(self, parent: ScopeRef) -> bool:
        """Create, change or delete the units right below ``parent``: an admin's, at its scope or below it
        (system admins: clusters and departments; a cluster's admins: its departments and their projects; a
        department's admins: its projects)."""
        return self._manages and parent.within(self.binding)

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
    """The caller, or the 401 (no or unknown token) or 403 (a viewer asking for a write) of the request.
    :class:`~.routes.common.JsonRoute` asks this before it reads a route's body (:func:`authenticate_first`):
    the answer is then kept in the request's state and given again here."""
    known = getattr(request.state, "principal", None)
    if isinstance(known, Principal):
        return known
    principal = _authenticate(request, credentials)
    request.state.principal = principal
    return principal


async def authenticate_first(request: Request) -> Principal:
    """:func:`authenticate`, before anything else of the request is read: 401 before 403 before 400."""
    return authenticate(request, await _bearer(request))


def _authenticate(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Principal:
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
        if authenticator.expired(credentials.credentials):
            raise ApiError(
                401,
                "The access token has expired: ask for a new one (POST /api/v1/token).",
                headers=_CHALLENGE,
            )
        raise ApiError(401, headers=_CHALLENGE)
    if principal.role == "viewer" and _writes(request):
        # A viewer writes nothing: said before its body is read, so a body's problems never come first.
        raise ApiError(403)
    return principal


def _writes(request: Request) -> bool:
    """Whether the request asks for a write (a preview is a read, whatever its method)."""
    if request.method in ("PUT", "PATCH", "DELETE"):
        return True
    return request.method == "POST" and not request.url.path.endswith("/preview")
