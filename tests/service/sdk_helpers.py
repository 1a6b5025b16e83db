"""Run:ai wire compatibility for the tests: the real schemas, a conformance check of every response, and the
Run:ai Python SDK (``runapy``) pointed at a live server.

:class:`Conformance` checks one response against Run:ai's own OpenAPI document, the whole one runapy 1.224.0
is generated from (``tests/fixtures/runai/runai-openapi-1.224.0.json``, a byte-for-byte copy of
``../shared/reference``, as is the subset beside it; ``.ci/run`` compares both), with
openapi-schema-validator, which reads OpenAPI 3.0's ``nullable`` correctly:

- a success body is validated against the response schema the whole document declares for the operation and
  status (when :data:`WHOLE_DOCUMENT`, the suite's one switch, is on, or inside :func:`whole_document`; off,
  the subset alone is read); the subset only for an operation the whole document lacks; an SDK model
  (:data:`SDK_MODELS`, ``Model.model_validate``, which requires every required key, unlike ``from_dict``)
  only where neither has the operation;
- a success status Run:ai does not declare for the operation (the service's own document must, below) has
  its body validated against the schema of the success Run:ai does declare, when it declares one;
- every error body, of any endpoint, is validated against Run:ai's ``Error`` (``SubmissionErrorV2`` where the
  operation declares it);
- every status must be one the service's own OpenAPI document declares for the operation.

The whole document is large (1.6 MB, 1201 schemas): it is read once per process, its registry is built once
and resolves a ``$ref`` only when a validation reaches it, and each (document, operation, status) gets one
validator, built on first use.

:func:`install` makes every response of the suite's clients go through it: Starlette's TestClient and httpx
(live servers) at once, the SDK's REST client when the SDK is first used (:class:`Lazy`), and schemathesis'
ASGI transport when its test starts (:func:`install_schemathesis`).  ``tests/service/conftest.py`` installs
it, so a run of the whole suite, or of ``tests/service``, checks every response, schemathesis' generated
requests included; a response that does not conform fails the test that received it.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import socket
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import openapi_schema_validator as osv
import uvicorn
from fastapi import FastAPI
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4
from starlette import testclient
from waiting import LIVE_TIMEOUT, READY_WITHIN, wait_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runai"
SUBSET = FIXTURES / "runai-openapi-subset.json"
#: Run:ai's whole OpenAPI document, the one runapy 1.224.0 is generated from.
WHOLE = FIXTURES / "runai-openapi-1.224.0.json"
_URN = "urn:runai"
_WHOLE_URN = "urn:runai:1.224.0"

#: The switch of the whole suite: success bodies are validated against Run:ai's whole document (``True``) or
#: against the subset alone (``False``, the check before issue 19).  ``test_sdk_org_setup.py`` checks its own
#: answers against the whole document either way (:func:`whole_document`).
WHOLE_DOCUMENT = True
_whole = [WHOLE_DOCUMENT]

#: SDK operations the subset lacks: (method, path) -> the SDK model of the success body (read only where the
#: document in use lacks the operation: with :data:`WHOLE_DOCUMENT` off).
SDK_MODELS: dict[tuple[str, str], str] = {
    ("GET", "/api/v1/workload-templates"): "TemplatesListResponse",
    ("GET", "/api/v1/workload-templates/{templateId}"): "SupersetTemplate",
    ("GET", "/api/v1/workload-templates/count"): "CountResponse",
    ("GET", "/api/v1/workloads"): "GetWorkloads200Response",
    ("GET", "/api/v1/workloads/count"): "CountResponse",
    ("GET", "/api/v1/workloads/{workloadId}"): "WorkloadDetailed",
    ("POST", "/api/v1/token"): "TokenResponse",
}
#: SDK operations whose success has no body.
NO_BODY: frozenset[tuple[str, str]] = frozenset({("GET", "/api/v1/workload-templates/name-availability")})


def _regex(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)) + "$")


def _match(paths: list[tuple[re.Pattern[str], str]], path: str) -> str | None:
    """The template of ``path``: a literal path wins over one with a parameter (``/count``, ``/{id}``)."""
    found = [template for regex, template in paths if regex.match(path)]
    return min(found, key=lambda t: t.count("{")) if found else None


def _absolute(schema: Any, urn: str = _URN) -> Any:
    """``#/components/...`` references made absolute in the document's URN."""
    if isinstance(schema, dict):
        return {
            k: (urn + v if k == "$ref" and v.startswith("#") else _absolute(v, urn))
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_absolute(v, urn) for v in schema]
    return schema


_SUCCESS = re.compile(r"^2\d\d$")


class RealSchemas:
    """One of Run:ai's OpenAPI documents: its operations and a validator for each response schema, built once
    and kept (the registry resolves a ``$ref`` when a validation first reaches it)."""

    def __init__(self, path: Path = SUBSET, urn: str = _URN) -> None:
        self.name = path.name
        self.urn = urn
        self.doc: dict[str, Any] = json.loads(path.read_text())
        resource = Resource.from_contents(self.doc, default_specification=DRAFT4)
        self.registry: Registry[Any] = Registry().with_resource(urn, resource)
        self.paths = [(_regex(template), template) for template in self.doc["paths"]]
        self._validators: dict[str, osv.OAS30ReadValidator] = {}

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]] | None:
        template = _match(self.paths, path)
        if template is None:
            return None
        operation = self.doc["paths"][template].get(method.lower())
        return (template, operation) if operation is not None else None

    def response_schema(self, operation: dict[str, Any], status: int) -> dict[str, Any] | None:
        """The JSON schema of the body ``operation`` declares for ``status``; ``None`` when it declares
        none."""
        response = operation.get("responses", {}).get(str(status))
        if response is None:
            return None
        if "$ref" in response:
            response = self.doc["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        return _absolute(schema, self.urn) if schema is not None else None

    def success_schema(self, operation: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """The one success status ``operation`` declares with a body, and that body's schema."""
        found = [
            (status, schema)
            for status in operation.get("responses", {})
            if _SUCCESS.match(status) and (schema := self.response_schema(operation, int(status))) is not None
        ]
        return found[0] if len(found) == 1 else None

    def schema(self, name: str) -> dict[str, Any]:
        return {"$ref": f"{self.urn}#/components/schemas/{name}"}

    def errors(self, schema: dict[str, Any], body: Any) -> list[str]:
        key = json.dumps(schema, sort_keys=True)
        validator = self._validators.get(key)
        if validator is None:
            validator = self._validators[key] = osv.OAS30ReadValidator(
                schema, registry=self.registry, format_checker=osv.oas30_format_checker
            )
        return [
            f"{'/'.join(str(p) for p in e.absolute_path) or '(body)'}: {e.message}"
            for e in sorted(validator.iter_errors(body), key=lambda e: list(map(str, e.absolute_path)))
        ]


@cache
def real_schemas() -> RealSchemas:
    """The subset."""
    return RealSchemas()


@cache
def whole_schemas() -> RealSchemas:
    """Run:ai's whole document."""
    return RealSchemas(WHOLE, _WHOLE_URN)


def documents() -> list[RealSchemas]:
    """The documents a success body is checked against, first the one that has the operation."""
    return [whole_schemas(), real_schemas()] if _whole[-1] else [real_schemas()]


@contextmanager
def whole_document() -> Iterator[None]:
    """Every answer checked against Run:ai's whole document while inside, whatever :data:`WHOLE_DOCUMENT`."""
    _whole.append(True)
    try:
        yield
    finally:
        _whole.pop()


@cache
def service_document() -> dict[str, Any]:
    """The service's own OpenAPI document (it depends on the code only, not on the data)."""
    import tempfile

    from template_engine.service.app import create_app
    from template_engine.service.settings import Settings

    with tempfile.TemporaryDirectory() as folder:
        app = create_app(Settings(database_url=f"sqlite:///{folder}/doc.db", dev_tokens=True))
        doc: dict[str, Any] = app.openapi()
        app.state.store.engine.dispose()
    return doc


class Conformance:
    """Checks responses (module doc) and counts what it checked, by operation and kind of check."""

    def __init__(self) -> None:
        self.checked: Counter[tuple[str, str, str]] = Counter()
        #: Verdicts by (document, method, path, status, content type, SHA-256 of the body), on which the check
        #: alone depends: many tests receive the very same answers (the seeded org's lists), and each distinct
        #: answer is validated once per process; every answer is still counted in ``checked``.
        self._verdicts: dict[tuple[Any, ...], tuple[list[str], tuple[str, str, str] | None]] = {}

    def check(self, method: str, path: str, status: int, content_type: str | None, content: bytes) -> None:
        problems = self.problems(method, path, status, content_type, content)
        if problems:
            raise AssertionError(
                f"{method} {path} answered {status}, which does not conform to Run:ai's API:\n  "
                + "\n  ".join(problems)
                + f"\nbody: {content[:2000]!r}"
            )

    def problems(
        self, method: str, path: str, status: int, content_type: str | None, content: bytes
    ) -> list[str]:
        key = (_whole[-1], method, path, status, content_type, hashlib.sha256(content).digest())
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._verdicts[key] = self._judge(method, path, status, content_type, content)
        out, counted = verdict
        if counted is not None:
            self.checked[counted] += 1
        return list(out)

    def _judge(
        self, method: str, path: str, status: int, content_type: str | None, content: bytes
    ) -> tuple[list[str], tuple[str, str, str] | None]:
        """The problems of one answer, and what :attr:`checked` counts for it (``None``: not counted)."""
        if not path.startswith("/api/") or method == "OPTIONS" or status == 405:
            return [], None
        ours = service_document()
        template = _match([(_regex(t), t) for t in ours["paths"]], path)
        if template is None or method.lower() not in ours["paths"][template]:
            return [], None  # no such endpoint (a 404 "No such endpoint."): checked as an Error below
        out: list[str] = []
        if str(status) not in ours["paths"][template][method.lower()]["responses"]:
            out.append(f"the service's OpenAPI document does not declare {status} for {method} {template}")
        real, found = next(
            ((doc, op) for doc in documents() if (op := doc.operation(method, path)) is not None),
            (documents()[0], None),
        )
        schema = real.response_schema(found[1], status) if found is not None else None
        if not content:
            if schema is not None or (status != 204 and (method, template) not in NO_BODY):
                out.append("an empty body")
            declared = found is not None and str(status) in found[1].get("responses", {})
            return out, (method, template, "schema" if declared else "no-body")
        if "json" not in (content_type or ""):
            return [*out, f"a body that is not JSON ({content_type})"], None
        body = json.loads(content)
        other = real.success_schema(found[1]) if found is not None and schema is None else None
        if schema is not None:
            kind = "schema"
            out += real.errors(schema, body)
        elif status >= 400:
            kind = "Error"
            out += real.errors(real.schema("Error"), body)
        elif other is not None:
            kind = "schema-of-" + other[0]
            out += [f"{problem} (Run:ai's {other[0]} body)" for problem in real.errors(other[1], body)]
        elif (method, template) in SDK_MODELS:
            kind = "sdk-model"
            out += _model_errors(SDK_MODELS[(method, template)], body)
        else:
            kind = "unchecked"
        if found is not None and real is not documents()[0]:
            kind += " (subset)"
        return out, (method, template, kind)


def _model_errors(name: str, body: Any) -> list[str]:
    from pydantic import ValidationError

    try:
        getattr(Lazy("runai.models"), name).model_validate(body)
    except ValidationError as exc:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']} ({name})" for e in exc.errors(include_url=False)]
    return []


CONFORMANCE = Conformance()
_installed = False


def install() -> None:
    """Check every response of the test clients, httpx, the SDK and schemathesis (module doc)."""
    global _installed
    if _installed:
        return
    _installed = True
    check = CONFORMANCE.check

    plain = testclient._TestClientTransport.handle_request

    def in_process(self: Any, request: httpx.Request) -> httpx.Response:
        response = plain(self, request)
        content = response.read()
        check(
            request.method,
            request.url.path,
            response.status_code,
            response.headers.get("content-type"),
            content,
        )
        return response

    testclient._TestClientTransport.handle_request = in_process  # type: ignore[method-assign]

    network = httpx.HTTPTransport.handle_request

    def over_http(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        response = network(self, request)
        content = response.read()
        check(
            request.method,
            request.url.path,
            response.status_code,
            response.headers.get("content-type"),
            content,
        )
        return response

    httpx.HTTPTransport.handle_request = over_http  # type: ignore[method-assign]

    if "runai" in sys.modules:
        _install_sdk()


def install_schemathesis() -> None:
    """Check every response schemathesis' ASGI transport receives (called by the schemathesis test, so that
    only the worker that runs it imports schemathesis)."""
    from schemathesis.transport.asgi import ASGITransport

    if getattr(ASGITransport.send, "checked", False):
        return
    check = CONFORMANCE.check

    generated = ASGITransport.send

    def from_schemathesis(self: ASGITransport, case: Any, **kwargs: Any) -> Any:
        response = generated(self, case, **kwargs)
        kind = response.headers.get("content-type") or response.headers.get("Content-Type")
        kind = kind[0] if isinstance(kind, list) and kind else kind
        url = httpx.URL(str(response.request.url))
        check(str(response.request.method), url.path, response.status_code, kind, response.content)
        return response

    from_schemathesis.checked = True  # type: ignore[attr-defined]
    ASGITransport.send = from_schemathesis  # type: ignore[method-assign]


_sdk_installed = False


def _install_sdk() -> None:
    """Check every response the SDK's REST client receives (from the first use of the SDK: :class:`Lazy`)."""
    global _sdk_installed
    if _sdk_installed or not _installed:
        return
    _sdk_installed = True
    from runai.rest import RESTClientObject

    check = CONFORMANCE.check
    sdk = RESTClientObject.request

    def through_sdk(self: RESTClientObject, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        response = sdk(self, method, url, *args, **kwargs)
        content = response.read()
        check(
            method.upper(), httpx.URL(url).path, response.status, response.getheader("content-type"), content
        )
        return response

    RESTClientObject.request = through_sdk  # type: ignore[method-assign]


class Lazy:
    """A module of the SDK, imported on first use of one of its names.  runapy's ``__init__`` imports its
    thousand models (about 2 s), which every xdist worker would pay when it collects ``test_sdk.py``; this way
    only the worker that runs an SDK test does.  From the first use on, the SDK's responses are checked."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._name)
        _install_sdk()
        return getattr(module, attr)


# -- the SDK against a live server --------------------------------------------------------------------------


runapy = Lazy("runai")


@cache
def _bearer_token_api_client() -> type:
    class BearerTokenApiClient(runapy.ApiClient):  # type: ignore[misc,name-defined]
        """runapy 1.224.0's ``ApiClient`` ignores ``Configuration(bearer_token=...)`` and logs in with the
        client credentials (``None`` then) instead; this one sends the configured token (docs/http-api.md)."""

        def _make_token_request(self) -> str:
            return str(self.configuration.bearer_token)

    return BearerTokenApiClient


def bearer_client(base_url: str, token: str) -> Any:
    config = runapy.Configuration(bearer_token=token, runai_base_url=base_url, retry_enabled=False)
    return _bearer_token_api_client()(config)


def login_client(base_url: str, client_id: str, secret: str, **options: Any) -> Any:
    """The SDK's documented login: ``POST /api/v1/token`` with the client credentials, happening here."""
    config = runapy.Configuration(
        client_id=client_id, client_secret=secret, runai_base_url=base_url, retry_enabled=False, **options
    )
    return runapy.ApiClient(config)


class LiveServer:
    """``app`` served by uvicorn on a loopback port, in a thread of this process."""

    def __init__(self, app: FastAPI) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)


def _started(live: LiveServer) -> bool:
    assert live.thread.is_alive(), "the live server's thread ended before it started"
    return bool(live.server.started)


@contextmanager
def serve(app: FastAPI) -> Iterator[LiveServer]:
    live = LiveServer(app)
    live.thread.start()
    try:
        wait_until(lambda: _started(live), "the live server did not start")
        yield live
    finally:
        live.server.should_exit = True
        live.thread.join(timeout=READY_WITHIN)
        live.sock.close()


@dataclass
class LiveOrg:
    """A live server on an empty database, the SDK logged in to it, and a plain client for the extensions."""

    server: LiveServer
    database_url: str
    sdk: Any
    http: httpx.Client


@contextmanager
def live_org(folder: Path, client_id: str, secret: str, admin: str) -> Iterator[LiveOrg]:
    """A new server on an empty SQLite database in ``folder`` (no seed), with an auth file of one system
    admin token (``admin``) and one application (``client_id``/``secret``) the SDK logs in as; every answer
    is checked against Run:ai's whole document while it runs."""
    from template_engine.service.app import create_app
    from template_engine.service.settings import Settings

    auth = folder / "auth.yaml"
    digest = hashlib.sha256(secret.encode()).hexdigest()
    auth.write_text(
        'signingKey: "a-signing-key-of-at-least-32-characters"\n'
        f"tokens:\n  - {{subject: alice, token: {admin}, role: system-admin}}\n"
        f'applications:\n  - {{clientId: {client_id}, sha256: "{digest}", role: system-admin}}\n'
    )
    url = f"sqlite:///{folder / 'org.db'}"
    with whole_document(), serve(create_app(Settings(database_url=url, auth_file=auth))) as server:
        sdk = Lazy("runai.runai_client").RunaiClient(login_client(server.url, client_id, secret))
        headers = {"Authorization": f"Bearer {admin}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=LIVE_TIMEOUT) as http:
            yield LiveOrg(server, url, sdk, http)


def parsed(model: str, data: Any) -> Any:
    """``data`` parsed into the SDK's model ``model`` with ``from_dict``, as the issue asks (a body that does
    not fit raises pydantic's ValidationError)."""
    found = getattr(Lazy("runai.models"), model).from_dict(data)
    assert found is not None, f"an empty body where a {model} belongs"
    return found


Call = Callable[[], Any]
