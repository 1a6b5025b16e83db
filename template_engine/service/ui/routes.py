"""The UI's pages under ``/ui``: server-side Jinja2 pages (autoescaped), a stylesheet and a small script.

=========================================  ==========================================================
page                                       what it shows
=========================================  ==========================================================
``GET /``                                  a browser (``Accept: text/html``) is sent on to ``/ui/``
``GET /ui/sign-in``, ``POST``              paste an API token; ``POST /ui/sign-out`` ends the session
``GET /ui/``                               the org tree: system, departments, projects (those readable),
                                           each with its runnable, not runnable, non-compliant counts
``GET /ui/scope/{key}``                    the templates seen from a scope, of every kind (Run:ai's
                                           ``workloadType``), runnable and compliance state
``GET /ui/template/{id}?view={key}``       the explain view of a template seen from a scope
``GET /ui/scope/{key}/policy?kind={kind}``  the effective policy of a kind of a scope (distributed when
                                           none is named)
``GET /ui/scope/{key}/edit/{document}``    the scope's ``defaults`` document, or its policy of a kind
``POST`` (``action=preview`` or ``save``)  (``policy``, ``training-policy``...: its policy file's name,
                                           :data:`POLICY_DOCUMENTS`) in a form; preview lists every
                                           affected template, save stores it
``GET /ui/scope/{key}/edit/template``      a new template of a kind chosen in the form, or
``.../edit/template:{id}``, ``POST``       one of the scope's: preview composes it, save stores it
                                           (the API's template routes of its kind, :func:`_endpoint`)
=========================================  ==========================================================

The document is edited in CodeMirror 5 (``static/vendor/codemirror``, MIT, with its ``LICENSE``; served from
``/ui/static/`` like the rest, so the CSP's ``script-src 'self'`` holds), which ``ui.js`` puts over the form's
``<textarea>``: without script the textarea posts the same form.  The problems of a refused preview or save
carry the line of the posted text they are at (:func:`_problem_lines`), which the editor marks in its gutter.

``{key}`` is a scope as the database keys it: ``system``, ``department:ID``, ``project:ID``.  Every page
enforces the API's role rules through the same :class:`~template_engine.service.context.Store` and
:class:`~template_engine.service.auth.Access`; the preview is the API's ``validateOnly`` write
(:func:`~template_engine.service.routes.defaults.write_defaults`,
:func:`~template_engine.service.routes.policies.write_policy`), and save the same write, kept.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

import jinja2
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute

from template_engine.diffing.pairs import pair_id
from template_engine.errors import InputError, Problem, TemplateEngineError, TooLargeError
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, KINDS, TEMPLATE_KINDS, WorkloadKind, kind_named
from template_engine.loader.kind_of import template_kind
from template_engine.loader.values import MAX_VALUES_EXPECTED
from template_engine.loader.yaml_safe import load_yaml
from template_engine.paths import Path as FieldPath
from template_engine.policy.document import SECTIONS, read_policy
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import BODY, MAX_VALUES, merge_patch, read_json, strip_nulls
from template_engine.service.errors import ApiError, Reason, bad_request
from template_engine.service.impact import MAX_CHANGES_SHOWN, place_name, stored_org
from template_engine.service.policy_api import request_form, without_attribute_defaults
from template_engine.service.policy_store import policy_file
from template_engine.service.routes.common import template_scope
from template_engine.service.routes.defaults import write_defaults
from template_engine.service.routes.policies import write_policy
from template_engine.service.routes.templates import router as templates_router
from template_engine.service.storage.repository import DefaultsRow, PolicyRow, TemplateRow, Unstorable
from template_engine.service.ui import pages, session
from template_engine.service.yamltext import dump_yaml
from template_engine.views.html import TEMPLATES as VIEW_TEMPLATES
from template_engine.views.html import make_environment
from template_engine.views.model import PageView, explain_page, failed_page, seen_from

__all__ = ["ProblemLine", "router"]

HERE = Path(__file__).parent
STATIC = HERE / "static"
VENDOR = STATIC / "vendor" / "codemirror"
#: The pages under ``/ui``, and ``GET /`` (where a browser that opens the service's address lands): one
#: router without a prefix, since the service shares its routers' routes (``app._shared_routes``).
router = APIRouter(include_in_schema=False)
#: The policy documents of a scope the form edits, by name: each kind's policy file without ``.yaml``
#: (``policy`` for a distributed training's, ``training-policy``...), in the order of :data:`KINDS`.
POLICY_DOCUMENTS: Mapping[str, WorkloadKind] = {
    kind.policy_file.removesuffix(".yaml"): kind for kind in KINDS
}
DOCUMENTS = ("defaults", *POLICY_DOCUMENTS)
_JS = "text/javascript; charset=utf-8"
#: The files served under ``/ui/static/``: name -> (the files joined, media type).
_STATIC: dict[str, tuple[tuple[Path, ...], str]] = {
    "style.css": ((VIEW_TEMPLATES / "style.css", STATIC / "ui.css"), "text/css; charset=utf-8"),
    "ui.js": ((STATIC / "ui.js",), _JS),
    # CodeMirror 5 and its YAML mode, as npm's codemirror@5.65.21 ships them (lib/, mode/yaml/).
    "codemirror.js": ((VENDOR / "codemirror.js", VENDOR / "yaml.js"), _JS),
    "codemirror.css": ((VENDOR / "codemirror.css",), "text/css; charset=utf-8"),
    "codemirror-LICENSE.txt": ((VENDOR / "LICENSE",), "text/plain; charset=utf-8"),
}


@cache
def environment() -> jinja2.Environment:
    """The views' environment with the UI's templates in front (autoescape on, strict undefined)."""
    return make_environment(HERE / "templates")


@cache
def _static(name: str) -> bytes:
    files, _ = _STATIC[name]
    return b"\n".join(path.read_bytes() for path in files)


#: The signed-in caller: the principal, the session's id and the CSRF token of its forms.
Session = session.SignedIn


class _SignIn(Exception):
    """No session (or one whose token no longer works): the answer is the sign-in page."""


def _render(request: Request, name: str, me: Session | None, status: int = 200, **context: Any) -> Response:
    html = (
        environment()
        .get_template(name)
        .render(
            ui=session.ui_path(request),
            layout="layout.html.j2",
            me=me.principal if me is not None else None,
            csrf=me.csrf if me is not None else None,
            **context,
        )
    )
    return session.protect(HTMLResponse(html, status_code=status))


def _redirect(request: Request, path: str) -> Response:
    return session.protect(RedirectResponse(session.ui_path(request) + path, status_code=303))


def _here(request: Request) -> str:
    """The current page as a ``next`` for the sign-in page: a path of the UI and its query."""
    path = request.url.path
    return path + (f"?{request.url.query}" if request.url.query else "")


def _safe_next(request: Request, given: str | None) -> str:
    """Where to go after signing in: a page of the UI (never another site, never a scheme)."""
    base = session.ui_path(request)
    if not given or "\\" in given or any(ord(c) < 32 for c in given):
        return base + "/"
    parts = urlsplit(given)
    if parts.scheme or parts.netloc or not (parts.path == base or parts.path.startswith(base + "/")):
        return base + "/"
    if parts.path.startswith("//"):
        return base + "/"
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _session(request: Request) -> Session:
    found = session.signed_in(request)
    if found is None:
        raise _SignIn
    return found


def _error(request: Request, me: Session | None, exc: ApiError) -> Response:
    if exc.reason is Reason.UNAUTHENTICATED:
        raise _SignIn
    return _render(
        request, "error.html.j2", me, exc.status, code=exc.status, message=exc.message, problems=_lines(exc)
    )


def _problem_text(problem: Problem) -> str:
    """``field: message (expected ...)``, the field as the form's document names it (a policy document's
    own fields, without the API body's ``policy``)."""
    return problem.field_line(_document_path(problem.path))


def _document_path(path: FieldPath) -> FieldPath:
    return path[1:] if path[:1] == ("policy",) else path


def _lines(exc: ApiError | TemplateEngineError) -> list[str]:
    """A refusal's problems as lines (``field: message (expected ...)``)."""
    return [_problem_text(problem) for problem in exc.problems]


@dataclass(frozen=True, slots=True)
class ProblemLine:
    """A problem of a refused preview or save, and the line of the posted text it is at (``None``: a
    problem of the whole document, or of a field the text does not write)."""

    text: str
    line: int | None = None


def _line_of(path: FieldPath, lines: Mapping[FieldPath, tuple[int, int]]) -> int | None:
    """The line of the nearest field of ``path`` the text writes (the field itself, else the closest of
    the mappings and lists around it); ``None`` for the document itself."""
    for end in range(len(path), 0, -1):
        found = lines.get(path[:end])
        if found is not None:
            return found[0]
    return None


def _problem_lines(
    problems: list[Problem] | tuple[Problem, ...], lines: Mapping[FieldPath, tuple[int, int]]
) -> list[ProblemLine]:
    """Each problem with its line: where the YAML reader located it, else where the text writes its field
    (the loader's line map of the posted text, :class:`~template_engine.loader.yaml_safe.Loaded`)."""
    out = []
    for problem in problems:
        line = problem.location.line if problem.location is not None else None
        if line is None:
            line = _line_of(_document_path(problem.path), lines)
        out.append(ProblemLine(_problem_text(problem), line))
    return out


def _page(request: Request, build: Callable[[Session], Response]) -> Response:
    """Run a page for the signed-in caller: the sign-in page without a session, an error page (with the
    API's status) for a refusal."""
    me: Session | None = None
    try:
        me = _session(request)
        try:
            return build(me)
        except ApiError as exc:
            return _error(request, me, exc)
        except TemplateEngineError as exc:
            message = "It cannot be composed."
            return _render(request, "error.html.j2", me, 400, code=400, message=message, problems=_lines(exc))
    except _SignIn:
        target = quote(_here(request), safe="/:?=&")
        return _redirect(request, f"/sign-in?next={target}")


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


Form = Annotated[dict[str, str] | None, Depends(session.form)]
#: The form of a page that needs a session: not read at all without one (the sign-in page answers).
SignedInForm = Annotated[dict[str, str] | None, Depends(session.signed_in_form)]


def _refused(request: Request, me: Session | None, why: str) -> Response:
    return _render(request, "error.html.j2", me, 403, code=403, message=why, problems=[])


def _checked_post(request: Request, fields: Mapping[str, str] | None, me: Session) -> Response | None:
    """The refusal (403) of a state-changing request that is not the UI's own: a foreign origin, or no form
    with the session's CSRF token; ``None`` when it may go on."""
    if not session.same_origin(request):
        return _refused(request, me, "Refused: the request comes from another site (Origin or Referer).")
    if fields is None:
        return _refused(
            request,
            me,
            "Refused: the body is not one of this UI's forms (application/x-www-form-urlencoded, UTF-8, "
            f"at most {session.MAX_FIELDS} fields).",
        )
    if not session.csrf_ok(fields.get("csrf"), me.session_id):
        return _refused(request, me, "Refused: the form's CSRF token is missing or wrong; reload the page.")
    return None


# -- static files, sign-in, sign-out ---------------------------------------------------------------------


@router.get("/ui/static/{name}")
def static(name: str) -> Response:
    if name not in _STATIC:
        return session.protect(Response("Not found.", status_code=404, media_type="text/plain"))
    response = Response(_static(name), media_type=_STATIC[name][1])
    response.headers["Cache-Control"] = "no-cache"
    return session.protect(response)


def _sign_in_page(request: Request, next_page: str, message: str | None, status: int) -> Response:
    """The sign-in form with a new double-submit token (in the form and in a cookie)."""
    nonce = session.new_nonce()
    response = _render(request, "sign_in.html.j2", None, status, next=next_page, nonce=nonce, message=message)
    session.set_sign_in_cookie(response, request, nonce)
    return response


@router.get("/ui/sign-in")
def sign_in_page(request: Request, next: str | None = None) -> Response:
    return _sign_in_page(request, _safe_next(request, next), None, 200)


@router.post("/ui/sign-in")
def sign_in(request: Request, fields: Form) -> Response:
    next_page = _safe_next(request, (fields or {}).get("next"))
    if (
        not session.same_origin(request)
        or fields is None
        or not session.sign_in_ok(request, fields.get("nonce"))
    ):
        message = "The sign-in form has expired or comes from another site: sign in again."
        return _sign_in_page(request, next_page, message, 403)
    token = fields.get("token", "").strip()
    authenticator = request.app.state.authenticator
    now = int(request.app.state.clock())
    credential = authenticator.sign_in(token, now) if token else None
    if credential is None:
        expired = bool(token) and authenticator.expired(token, now)
        message = (
            "That token has expired: ask for a new one (POST /api/v1/token)."
            if expired
            else "The service does not know that token."
        )
        return _sign_in_page(request, next_page, message, 401)
    response = session.protect(RedirectResponse(next_page, status_code=303))
    session.clear_session(response, request, (session.SIGN_IN_COOKIE,))
    session.open_session(response, request, credential)  # the token goes no further than this request
    return response


@router.post("/ui/sign-out")
def sign_out(request: Request, fields: SignedInForm) -> Response:
    me = session.signed_in(request)
    if me is not None:
        refused = _checked_post(request, fields, me)
        if refused is not None:
            return refused
        session.end_session(request)  # revoked in the database: a copy of the cookie stops working too
    response = _redirect(request, "/sign-in")
    session.clear_session(response, request)
    return response


# -- reading pages -------------------------------------------------------------------------------------------


def _wants_html(request: Request) -> bool:
    """Whether the request is a browser's page load: its ``Accept`` names ``text/html`` (every browser's
    does); an API client's (``application/json``, or none) does not."""
    accept = request.headers.get("accept") or ""
    return any(part.split(";", 1)[0].strip().lower() == "text/html" for part in accept.split(","))


@router.get("/")
def service_root(request: Request) -> Response:
    """A browser opening the service's address is sent on to the UI (307: the same method, not cached as
    permanent); an API client gets the JSON 404 of any path the API does not have (docs/decisions.md)."""
    if not _wants_html(request):
        raise ApiError(404, "No such endpoint.")
    response = RedirectResponse(session.ui_path(request) + "/", status_code=307)
    response.headers["Vary"] = "Accept"
    return response


@router.get("/ui")
def root(request: Request) -> Response:
    return _redirect(request, "/")


@router.get("/ui/")
def org_tree(request: Request) -> Response:
    def build(me: Session) -> Response:
        with _store(request).read(me.principal) as ctx:
            tree = pages.org_tree(ctx, stored_org(ctx))
        return _render(request, "tree.html.j2", me, tree=tree.root, withheld=tree.withheld)

    return _page(request, build)


@router.get("/ui/scope/{key}")
def scope_page(request: Request, key: str) -> Response:
    def build(me: Session) -> Response:
        with _store(request).read(me.principal) as ctx:
            place = pages.placement_of(ctx, key)
            ctx.access.require_read(place.ref)
            stored = stored_org(ctx)
            rows, left = pages.bounded_scope_templates(stored, place)
            writable = ctx.access.can_write(place.ref)
        return _render(
            request,
            "scope.html.j2",
            me,
            key=place.key,
            scope=pages.scope_label(place),
            scope_type=place.type,
            rows=rows,
            left=left,
            writable=writable,
            own_scope=str(place.scope()),
            creates=bool(template_kinds()),
            kinds=policy_links(),
        )

    return _page(request, build)


def _template_page(ctx: Ctx, template_id: str, view_key: str | None) -> tuple[PageView, str]:
    try:
        ident = str(uuid.UUID(template_id))
    except ValueError:
        raise ApiError(404, f"No such template: {template_id!r}.") from None
    row = ctx.repo.template(ident)
    if row is None:
        raise ApiError(404, f"No such template: {template_id!r}.")
    own = template_scope(ctx, row)
    ctx.access.require_read(own.ref)
    view = pages.placement_of(ctx, view_key) if view_key else own
    if not own.contains(view):
        raise ApiError(
            404,
            f"Template {row.name!r} is not seen from {pages.scope_label(view)}: it belongs to another scope.",
        )
    ctx.access.require_read(view.ref)
    stored = stored_org(ctx)
    template = stored.org.templates.get(own.scope(), {}).get(row.name)
    if template is None:
        problems = stored.org.broken.get(f"db:templates/{row.id}", ())
        page = PageView(
            row.name,
            str(own.scope()),
            seen_from(view.view()),
            None,
            False,
            False,
            (),
            (),
            (),
            tuple(p.one_line() for p in problems) or ("the stored template cannot be read",),
        )
        return page, view.key
    pid = pair_id(view.view(), template)
    outcome = pages.compose_template(stored, template, view.view())
    if isinstance(outcome, list):
        return failed_page(template, view.view(), outcome, pair_id=pid), view.key
    page = explain_page(outcome, pair_id=pid, name=place_name(stored.labels))
    return pages.kind_page(page, template.kind), view.key


@router.get("/ui/template/{template_id}")
def template_page(request: Request, template_id: str, view: str | None = None) -> Response:
    def build(me: Session) -> Response:
        with _store(request).read(me.principal) as ctx:
            page, key = _template_page(ctx, template_id, view)
        back = f"{session.ui_path(request)}/scope/{quote(key, safe=':')}"
        label = f"All templates seen from {page.seen_from}"
        return _render(request, "explain.html.j2", me, page=page, index_href=back, index_label=label)

    return _page(request, build)


@dataclass(frozen=True, slots=True)
class PolicyLink:
    """A kind's policy as the pages link it: its effective view (``/policy?kind=NAME``) and its form
    (``/edit/DOCUMENT``)."""

    kind: WorkloadKind
    document: str


def policy_links() -> list[PolicyLink]:
    """The policy of each kind, in the order of :data:`~template_engine.kinds.KINDS`."""
    return [PolicyLink(kind, document) for document, kind in POLICY_DOCUMENTS.items()]


def _document_of(kind: WorkloadKind) -> str:
    return next(document for document, found in POLICY_DOCUMENTS.items() if found is kind)


def _kind_asked_for_policy(name: str | None) -> WorkloadKind:
    """The kind the effective policy page names (``?kind=training``; a distributed training's without
    one); 404 for a name that is no kind's."""
    if name is None:
        return DISTRIBUTED
    found = KIND_BY_NAME.get(name)
    if found is None:
        raise ApiError(404, f"No such workload kind: {name!r} (one of {', '.join(KIND_BY_NAME)}).")
    return found


@router.get("/ui/scope/{key}/policy")
def policy_page(request: Request, key: str, kind: str | None = None) -> Response:
    def build(me: Session) -> Response:
        of_kind = _kind_asked_for_policy(kind)
        with _store(request).read(me.principal) as ctx:
            place = pages.placement_of(ctx, key)
            ctx.access.require_read(place.ref)
            stored = stored_org(ctx)
            view = pages.policy_view(stored, place, of_kind)
            writable = ctx.access.can_write(place.ref)
        return _render(
            request,
            "policy.html.j2",
            me,
            key=place.key,
            scope=pages.scope_label(place),
            policy=view,
            writable=writable,
            document=_document_of(of_kind),
            kinds=policy_links(),
        )

    return _page(request, build)


# -- a pending change: preview and save ----------------------------------------------------------------------


def _current(ctx: Ctx, place: Placement, document: str) -> tuple[str, int]:
    """The scope's document as the form shows it (YAML) and the version it is at (0: never one yet; a
    deleted one's otherwise, which the next save goes on from)."""
    if document == "defaults":
        row: DefaultsRow | None
        row, version = ctx.repo.defaults_at(place.key)
        return (dump_yaml(row.document) if row and row.document else ""), version
    policy: PolicyRow | None
    policy, version = ctx.repo.policy_at(place.key, kind=POLICY_DOCUMENTS[document].name)
    if policy is None:
        return "", version
    return (policy.text if policy.text is not None else dump_yaml(policy.document)), version


def _label(document: str) -> str:
    """What the pages call a document: ``defaults``, ``policy`` (a distributed training's), ``training
    policy``..."""
    kind = POLICY_DOCUMENTS.get(document)
    return document if kind is None or kind is DISTRIBUTED else f"{kind.noun} policy"


def _editable(ctx: Ctx, key: str, document: str) -> Placement:
    if document not in DOCUMENTS:
        raise ApiError(404, f"No such document: {document!r} (one of {', '.join(DOCUMENTS)}).")
    place = pages.placement_of(ctx, key)
    ctx.access.require_write(place.ref)
    return place


def _change_page(
    request: Request,
    me: Session,
    place: Placement,
    document: str,
    text: str,
    version: int,
    status: int = 200,
    **extra: Any,
) -> Response:
    kind = POLICY_DOCUMENTS.get(document)
    context: dict[str, Any] = {
        "key": place.key,
        "scope": pages.scope_label(place),
        "document": document,
        "kind": kind,
        "own_defaults": kind is not None and kind is not DISTRIBUTED,
        "label": _label(document),
        "kinds": policy_links(),
        "text": text,
        "version": version,
        "results": None,
        "problems": [],
        "stale": None,
        "saved": None,
        "max_shown": MAX_CHANGES_SHOWN,
    }
    context.update(extra)
    return _render(request, "change.html.j2", me, status, **context)


@router.get("/ui/scope/{key}/edit/{document}")
def change_form(
    request: Request, key: str, document: str, saved: int | None = None, kind: str | None = None
) -> Response:
    if _is_template(document):
        return _page(request, lambda me: _template_form(request, me, key, document, saved, kind))

    def build(me: Session) -> Response:
        with _store(request).read(me.principal) as ctx:
            place = _editable(ctx, key, document)
            text, version = _current(ctx, place, document)
        confirmed = saved if saved is not None and saved == version else None
        return _change_page(request, me, place, document, text, version, saved=confirmed)

    return _page(request, build)


Lines = Mapping[FieldPath, tuple[int, int]]


def _parse(text: str, document: str) -> tuple[dict[str, Any] | None, list[ProblemLine], Lines, int]:
    """The form's text as a document (YAML or JSON) and where it writes each field, or the problems that
    say why it is not one (each with its line, and what was expected as the API's ``details`` say it), and
    the status to answer them with (413 past the value bound, 400 otherwise).

    The text is read by the files' loader with the bound of an API body (:data:`MAX_VALUES`) applied while
    its nodes are made: a text of anchors or a long list costs no more than that many values before it is
    refused (413)."""
    try:
        loaded = load_yaml(text, f"the {document} document", MAX_VALUES, MAX_VALUES_EXPECTED)
    except TooLargeError as exc:
        return None, _problem_lines(exc.problems, {}), {}, 413
    except InputError as exc:
        return None, _problem_lines(exc.problems, {}), {}, 400
    data = loaded.data
    if data is None:
        return {}, [], {}, 200
    if not isinstance(data, dict):
        return (
            None,
            [ProblemLine(f"the {document} document must be a mapping (YAML or a JSON object)", 1)],
            {},
            400,
        )
    return data, [], loaded.lines, 200


def _admitted(data: dict[str, Any], document: str, place: Placement) -> dict[str, Any]:
    """The form's document after the admission of an API body: the UI builds the body the API's ``PUT``
    would get (the defaults document, or ``{"meta": ..., "policy": ...}``) and reads it with the API's own
    :func:`~template_engine.service.documents.read_json`, so a form holds no more values than a body may
    (413, :data:`~template_engine.service.documents.MAX_VALUES`) and no value a body may not (400)."""
    body = data if document == "defaults" else {"meta": _meta(place), "policy": data}
    text = json.dumps(body, ensure_ascii=False, default=str).encode()
    read = read_json(text)
    return read if document == "defaults" else dict(read["policy"])


def _asset_ids(ctx: Ctx, names: Any, where: FieldPath, problems: list[Problem]) -> Any:
    """A list of imposed data source names (at ``where``) as the ids an API body gives; a problem on each
    name no data source has.  Anything but a list is given as it is, for the policy's reader to refuse."""
    if not isinstance(names, list):
        return names
    found = ctx.repo.assets_named([("datasource", n) for n in names if isinstance(n, str)])
    ids = []
    for index, name in enumerate(names):
        row = found.get(("datasource", name)) if isinstance(name, str) else None
        if row is None:
            problems.append(
                Problem(
                    f"unknown data source asset {name!r}",
                    (*where, index),
                    None,
                    "the name of a data source asset",
                )
            )
        else:
            ids.append(row.id)
    return ids


def _policy_change(
    data: Mapping[str, Any], place: Placement, kind: WorkloadKind
) -> Callable[[Ctx, PolicyRow | None, DefaultsRow | None], Any]:
    """The request form of a policy document of ``kind`` (its policy file, imposed assets by name): its
    rules and imposed data sources (ids, per role or one list as the kind's policy has them).  A distributed
    training's ``defaults`` are its attribute defaults, over the scope's defaults document as it is; any
    other kind's are its own, as written.  A section the document may not have is refused by the policy's
    reader (:func:`~template_engine.policy.document.read_policy`), in its words."""

    def change(ctx: Ctx, policy: PolicyRow | None, defaults: DefaultsRow | None) -> dict[str, Any]:
        unknown = {name: value for name, value in data.items() if name not in SECTIONS}
        problems = read_policy(unknown, BODY, {}, place.scope(), kind=kind)[1] if unknown else []
        given: dict[str, Any] = {}
        if "rules" in data:
            given["rules"] = data["rules"]
        imposed = data.get("imposedAssets")
        if kind.roled_policy and isinstance(imposed, Mapping):
            given["imposedAssets"] = {
                role: _asset_ids(ctx, names, ("imposedAssets", role), problems)
                for role, names in imposed.items()
            }
        elif not kind.roled_policy and isinstance(imposed, list):
            given["imposedAssets"] = _asset_ids(ctx, imposed, ("imposedAssets",), problems)
        elif imposed is not None:  # not the shape of the kind's imposed assets: its reader says so
            given["imposedAssets"] = imposed
        if problems:
            raise bad_request(problems, "The policy is not valid.")
        if kind is not DISTRIBUTED:
            if "defaults" in data:
                given["defaults"] = data["defaults"]
            return strip_nulls(given)  # type: ignore[no-any-return]
        current = request_form(ctx, policy, defaults)
        # The scope's defaults as they are, with the attribute defaults this document gives.
        kept = without_attribute_defaults(current.get("defaults") or {})
        written = data.get("defaults")
        merged = merge_patch(kept, written) if isinstance(written, Mapping) else kept
        if merged:
            given["defaults"] = merged
        return strip_nulls(given)  # type: ignore[no-any-return]

    return change


def _meta(place: Placement) -> dict[str, Any]:
    if place.type == "project" and place.project is not None:
        return {"scope": "project", "projectId": str(place.project.id)}
    if place.type == "department" and place.department is not None:
        return {"scope": "department", "departmentId": str(place.department.id)}
    return {"scope": "tenant"}


def _action(fields: Mapping[str, str]) -> tuple[bool, str, int]:
    """A change form's action (``True``: preview, ``False``: save), its text (with Unix line ends) and the
    version it was read at; a 400 for a form without them."""
    action = fields.get("action")
    text = fields.get("text", "").replace("\r\n", "\n")
    version_text = fields.get("version", "")
    if (
        action not in ("preview", "save")
        or not (version_text.isascii() and version_text.isdigit())
        or len(version_text) > 18
    ):
        raise ApiError(400, "The form needs action (preview or save) and the version it was read at.")
    return action == "preview", text, int(version_text)


def _refused_write(exc: ApiError | Unstorable, lines: Lines, again: Callable[..., Response]) -> Response:
    """The form ``again`` with why a preview or save was refused: each problem at its line (400, and a value
    that cannot be stored), the numbers of a form over the bound of a body (413: what it holds and the most
    a body may), or that the document changed since the form was read (412); any other refusal is raised."""
    if isinstance(exc, Unstorable):
        problem = Problem(f"cannot be stored: {exc.reason}", exc.path)
        return again(400, problems=_problem_lines([problem], lines))
    if exc.reason is Reason.INVALID:
        return again(exc.status, problems=_problem_lines(exc.problems, lines))
    if exc.reason is Reason.TOO_LARGE:
        return again(exc.status, problems=[ProblemLine(exc.message), *_problem_lines(exc.problems, lines)])
    if exc.reason is Reason.STALE:
        return again(exc.status, stale=exc.message)
    raise exc


@router.post("/ui/scope/{key}/edit/{document}")
def change_submit(request: Request, key: str, document: str, fields: SignedInForm) -> Response:
    def build(me: Session) -> Response:
        refused = _checked_post(request, fields, me)
        if refused is not None:
            return refused
        assert fields is not None
        if _is_template(document):
            return _template_submit(request, me, key, document, fields)
        with _store(request).read(me.principal) as ctx:
            place = _editable(ctx, key, document)
        preview, text, version = _action(fields)

        def again(status: int, **extra: Any) -> Response:
            return _change_page(request, me, place, document, text, version, status, **extra)

        data, problems, lines, status = _parse(text, document)
        if data is None:
            return again(status, problems=problems)
        try:
            data = _admitted(data, document, place)  # before any preview or save
            if document == "defaults":
                scope_id = str(place.id) if place.id is not None else None
                written = write_defaults(
                    _store(request),
                    me.principal,
                    place.type,
                    scope_id,
                    f'"{version}"',
                    lambda _current: strip_nulls(data),
                    preview,
                )
                found, bodies, labels = written.affected, written.body, written.labels
            else:
                kind = POLICY_DOCUMENTS[document]
                change = _policy_change(data, place, kind)
                policy = write_policy(
                    _store(request), me.principal, _meta(place), preview, change, version, kind=kind
                )
                found, labels = policy.affected, policy.labels
                bodies = policy.body.get("affectedTemplates")
        except (ApiError, Unstorable) as exc:
            return _refused_write(exc, lines, again)
        if not preview:
            # The version the save made (from ``version``): the page confirms it only while that is still the
            # current version, so a link with ?saved= cannot announce a save that did not happen.
            made = version + 1
            return _redirect(request, f"/scope/{quote(place.key, safe=':')}/edit/{document}?saved={made}")
        file = (
            f"db:defaults/{place.key}"
            if document == "defaults"
            else policy_file(place.scope(), POLICY_DOCUMENTS[document])
        )
        edited = pages.Edited(file, _label(document), pages.scope_label(place), version)
        results = pages.affected_views(found or [], bodies or [], labels or {}, edited)
        return again(200, results=results)

    return _page(request, build)


# -- a template of any kind: create, preview, replace --------------------------------------------------------

#: The API's template routes, of which the template form's preview and save are the very functions:
#: ``POST {TEMPLATES_API}/{segment}`` creates, ``POST .../{segment}/preview`` composes without storing,
#: ``PUT .../{segment}/{templateId}`` replaces (``segment``: a kind's ``template_segment``).
TEMPLATES_API = "/api/v1/workload-templates"
#: The form of a new template (``/ui/scope/{key}/edit/template``); ``template:ID`` edits one of the scope's.
NEW_TEMPLATE = "template"
_OF_TEMPLATE = NEW_TEMPLATE + ":"


def _is_template(document: str) -> bool:
    return document == NEW_TEMPLATE or document.startswith(_OF_TEMPLATE)


def _endpoint(method: str, kind: WorkloadKind, tail: str = "") -> Callable[..., Any] | None:
    """The API's own function of ``method`` on ``kind``'s template route (``tail`` after its segment), or
    ``None`` when the service serves no such route (a kind whose templates it does not store, an inference's
    ``PUT``: Run:ai's inference templates do not change)."""
    if kind.template_segment is None:
        return None
    path = f"{TEMPLATES_API}/{kind.template_segment}{tail}"
    for route in templates_router.routes:
        if isinstance(route, APIRoute) and route.path_format == path and method in (route.methods or ()):
            return route.endpoint
    return None


def template_kinds() -> list[WorkloadKind]:
    """The kinds a template may be created of here: those of :data:`~template_engine.kinds.TEMPLATE_KINDS`
    whose create route the service serves."""
    return [kind for kind in TEMPLATE_KINDS if _endpoint("POST", kind) is not None]


def _row_kind(row: TemplateRow) -> WorkloadKind:
    """The kind of a stored template: its row's (``templates.kind``).  A row read without one is a
    distributed template's (every template before the kinds)."""
    name: str | None = getattr(row, "kind", None)
    return kind_named(name)


def _own_template(ctx: Ctx, place: Placement, document: str) -> TemplateRow:
    """The template ``template:ID`` names, one of the scope's own (404 for any other)."""
    ident = document.removeprefix(_OF_TEMPLATE)
    try:
        ident = str(uuid.UUID(ident))
    except ValueError:
        raise ApiError(404, f"No such template: {ident!r}.") from None
    row = ctx.repo.template(ident)
    if row is None or row.scope_key != place.key:
        raise ApiError(404, f"No template {ident!r} belongs to {pages.scope_label(place)}.")
    return row


def _kind_asked(name: str | None) -> WorkloadKind:
    """The kind a new template's form names (the first the service creates when it names none)."""
    kinds = template_kinds()
    if not kinds:  # pragma: no cover - the service always serves distributed templates
        raise ApiError(404, "The service creates no templates.")
    if name is None:
        return kinds[0]
    found, problems = template_kind({"kind": name}, "the form", {})  # the loader's words for a file's kind
    if found is not None and found not in kinds:
        expected = "one of " + ", ".join(kind.name for kind in kinds)
        problems = [Problem(f"the service stores no {found.noun} templates", ("kind",), None, expected)]
    if found is None or problems:
        raise bad_request(problems)
    return found


def _template_form_page(
    request: Request,
    me: Session,
    place: Placement,
    document: str,
    kind: WorkloadKind,
    text: str,
    version: int,
    row: TemplateRow | None,
    status: int = 200,
    **extra: Any,
) -> Response:
    context: dict[str, Any] = {
        "key": place.key,
        "scope": pages.scope_label(place),
        "document": document,
        "kind": kind,
        "kinds": template_kinds() if row is None else [kind],
        "template_id": row.id if row is not None else None,
        "template_name": row.name if row is not None else None,
        "changeable": row is None or _endpoint("PUT", kind, "/{templateId}") is not None,
        "text": text,
        "version": version,
        "preview": None,
        "problems": [],
        "stale": None,
        "saved": None,
    }
    context.update(extra)
    return _render(request, "template_form.html.j2", me, status, **context)


def _template_form(
    request: Request, me: Session, key: str, document: str, saved: int | None, kind_name: str | None
) -> Response:
    with _store(request).read(me.principal) as ctx:
        place = pages.placement_of(ctx, key)
        ctx.access.require_write(place.ref)
        row = _own_template(ctx, place, document) if document != NEW_TEMPLATE else None
    if row is None:
        return _template_form_page(request, me, place, document, _kind_asked(kind_name), "", 0, None)
    version = row.audit.version
    confirmed = saved if saved is not None and saved == version else None
    text = dump_yaml(row.document)
    kind = _row_kind(row)
    return _template_form_page(request, me, place, document, kind, text, version, row, saved=confirmed)


def _template_body(data: Mapping[str, Any], place: Placement, scoped: bool) -> dict[str, Any]:
    """The API body of the form's document: the document itself, its ``meta`` with the page's scope when
    ``scoped`` (a create or a preview: Run:ai's ``scopeType``, ``scopeId``); a ``meta`` that is not a mapping
    is left as it is, for the API to refuse."""
    body = dict(data)
    meta = body.get("meta")
    if scoped and isinstance(meta, Mapping):
        scope: dict[str, Any] = {"scopeType": place.type}
        if place.id is not None:
            scope["scopeId"] = str(place.id)
        body["meta"] = {**meta, **scope}
    return body


def _template_submit(
    request: Request, me: Session, key: str, document: str, fields: Mapping[str, str]
) -> Response:
    """Preview (the API's ``.../preview``: composed as seen from the scope, nothing stored) or save (its
    create, or its ``PUT`` with the version read as ``If-Match``) a template of the scope."""
    store = _store(request)
    with store.read(me.principal) as ctx:
        place = pages.placement_of(ctx, key)
        ctx.access.require_write(place.ref)
        row = _own_template(ctx, place, document) if document != NEW_TEMPLATE else None
    kind = _row_kind(row) if row is not None else _kind_asked(fields.get("kind"))
    preview, text, version = _action(fields)

    def again(status: int, **extra: Any) -> Response:
        return _template_form_page(request, me, place, document, kind, text, version, row, status, **extra)

    data, problems, lines, status = _parse(text, "template")
    if data is None:
        return again(status, problems=problems)
    if preview:
        endpoint = _endpoint("POST", kind, "/preview")
        arguments: dict[str, Any] = {}
    elif row is None:
        endpoint = _endpoint("POST", kind)
        arguments = {}
    else:
        endpoint = _endpoint("PUT", kind, "/{templateId}")
        arguments = {"templateId": uuid.UUID(row.id), "if_match": f'"{version}"'}
    if endpoint is None:
        raise ApiError(405, f"Run:ai does not let {kind.a_noun} template change: create a new one.")
    try:
        body = _template_body(data, place, preview or row is None)
        raw = read_json(json.dumps(body, ensure_ascii=False, default=str).encode())
        answer: Response = endpoint(principal=me.principal, raw=raw, store=store, **arguments)
    except (ApiError, Unstorable) as exc:
        return _refused_write(exc, lines, again)
    answered = json.loads(bytes(answer.body))
    if preview:
        return again(200, preview=pages.template_preview(answered))
    made = answer.headers.get("etag", "").strip('"')
    ident = answered["meta"]["id"]
    where = f"/scope/{quote(place.key, safe=':')}/edit/{_OF_TEMPLATE}{ident}"
    return _redirect(request, f"{where}?saved={made}" if made.isdigit() else where)
