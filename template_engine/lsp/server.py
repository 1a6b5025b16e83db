"""The language server: pygls over stdio, the engine's answers in the protocol's types.

Every change the editor reports (a buffer opened, edited, saved or closed; a file changed on disk) starts a
recomputation: the org is loaded again through :class:`~.buffers.Buffers` (unchanged files are not parsed
again) and only the pairs the change reaches are composed (:class:`~.analysis.Job`).  It runs on the event
loop in steps of one pair, so requests are answered between two steps from the last complete state; a newer
change cancels it (its work is useless) and starts again from that state.  A request the editor cancels
stops at its next step.  Only this module imports pygls and lsprotocol (the ``lsp`` extra).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from template_engine._version import VERSION
from template_engine.errors import Location, TemplateEngineError
from template_engine.loader.sources import Unreadable
from template_engine.loader.tree import load_org
from template_engine.lsp.actions import actions
from template_engine.lsp.analysis import Analysis, Job
from template_engine.lsp.buffers import Buffers
from template_engine.lsp.complete import completions
from template_engine.lsp.diagnostics import Diagnostic, by_file
from template_engine.lsp.fields import fields_at
from template_engine.lsp.hover import field_hover, hover_spot, name_hover
from template_engine.lsp.navigate import definitions, references

__all__ = ["OrgServer", "find_root", "run"]

log = logging.getLogger(__name__)

#: The notification sent after each recomputation, with the ids of the pairs it composed and the number of
#: pairs (``$/``: a client that does not know it ignores it).  Tests count work with it, not time.
ANALYSED = "$/templateEngine/analysed"


#: The command that picks the pair hover shows (``workspace/executeCommand``, arguments: the pair's name as
#: diagnostics name it, or nothing for every pair); ``initializationOptions`` may give it as ``pair``.
PICK_PAIR = "templateEngine.pickPair"

#: How many values a hover reads before it lets the event loop run (and a cancellation stop it).
STEP = 32

_COMPLETION_KINDS = {
    "field": types.CompletionItemKind.Field,
    "value": types.CompletionItemKind.EnumMember,
    "name": types.CompletionItemKind.Reference,
}


def find_root(path: Path) -> Path | None:
    """The templates folder a file belongs to: the nearest folder above it (or it) holding ``org.yaml``."""
    for folder in (path, *path.parents):
        if (folder / "org.yaml").is_file():
            return folder
    return None


class AnsweringProtocol(LanguageServerProtocol):
    """pygls' protocol, but a request whose parameters do not parse (a position with a negative line, say) is
    answered with JSON-RPC's error (``InvalidParams``): pygls only logs it, and the editor would wait for an
    answer for ever."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" in data and "id" in data and "method" in data:
                self._send_response(data["id"], error=exc.to_response_error())
            raise


class OrgServer:
    """The state of one editor session: the templates folder, the buffers, the last complete analysis."""

    def __init__(self, root: Path | None = None, variables: Mapping[str, str] | None = None) -> None:
        self.server = LanguageServer("template-engine", VERSION, protocol_cls=AnsweringProtocol)
        self.root: Path | None = root.absolute() if root is not None else None
        self.buffers: Buffers | None = Buffers(self.root) if self.root is not None else None
        self.variables = dict(variables or {})
        self.analysis: Analysis | None = None
        #: Problems that stopped the org from loading at all (``org.yaml`` unusable).
        self.load_problems: list[Diagnostic] = []
        self.published: set[str] = set()
        #: The diagnostics last published, by file (what code actions fix).
        self.shown: dict[str, list[Diagnostic]] = {}
        self._task: asyncio.Task[None] | None = None
        #: Set when a recomputation finishes (tests and the benchmark wait on it).
        self.settled = asyncio.Event()
        #: How many recomputations completed, and how many pairs each composed (for tests: work, not time).
        self.history: list[tuple[str, ...]] = []
        #: How many pairs' values requests have read (tests count work, not time).
        self.steps = 0
        #: The pair the user picked (``vision/vit-finetune``): hover shows only it; ``None``: every pair.
        self.pair: str | None = None
        self._register()

    # -- paths -----------------------------------------------------------------------------------------------

    def rel(self, uri: str) -> str | None:
        """The path of ``uri`` relative to the templates folder (found from the first file opened)."""
        fs = to_fs_path(uri)
        if fs is None:
            return None
        path = Path(fs).absolute()
        if self.root is None:
            found = find_root(path.parent)
            if found is None:
                return None
            self.root = found
            self.buffers = Buffers(found)
        for base in (self.root, self.root.resolve()):
            try:
                return path.relative_to(base).as_posix()
            except ValueError:
                continue
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return None

    def uri(self, rel: str) -> str:
        assert self.root is not None
        return from_fs_path(str(self.root / rel)) or (self.root / rel).as_uri()

    # -- the protocol ----------------------------------------------------------------------------------------

    def _register(self) -> None:
        server = self.server

        @server.feature(types.INITIALIZE)
        def initialize(params: types.InitializeParams) -> None:
            options = params.initialization_options
            if isinstance(options, dict) and isinstance(options.get("pair"), str):
                self.pair = options["pair"]

        @server.feature(types.INITIALIZED)
        def initialized(params: types.InitializedParams) -> None:
            """Ask the client to say when a YAML file changes on disk (a checkout, another program), if it
            can be asked (``didChangeWatchedFiles`` with dynamic registration)."""
            workspace = self.server.client_capabilities.workspace
            watched = workspace.did_change_watched_files if workspace is not None else None
            if watched is None or not watched.dynamic_registration:
                return
            watchers = [
                types.FileSystemWatcher(glob_pattern=pattern) for pattern in ("**/*.yaml", "**/*.yml")
            ]
            options = types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers)
            registration = types.Registration(
                id="template-engine-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=options,
            )
            self.server.client_register_capability(types.RegistrationParams(registrations=[registration]))

        @server.command(PICK_PAIR)
        def pick_pair(*arguments: str) -> str | None:  # not `object`: pygls would pass the server in
            """Hover shows only this pair (``vision/vit-finetune``, as diagnostics name it); none: all."""
            chosen = arguments[0] if arguments else None
            self.pair = chosen if isinstance(chosen, str) and chosen else None
            return self.pair

        @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
        def did_open(params: types.DidOpenTextDocumentParams) -> None:
            self._buffer(params.text_document.uri)

        @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
        def did_change(params: types.DidChangeTextDocumentParams) -> None:
            self._buffer(params.text_document.uri)

        @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
        def did_save(params: types.DidSaveTextDocumentParams) -> None:
            rel = self.rel(params.text_document.uri)
            if rel is not None and self.buffers is not None:
                self.buffers.changed_on_disk(rel)
                self.schedule()

        @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
        def did_close(params: types.DidCloseTextDocumentParams) -> None:
            rel = self.rel(params.text_document.uri)
            if rel is not None and self.buffers is not None:
                self.buffers.close_buffer(rel)
                self.buffers.changed_on_disk(rel)
                self.schedule()

        @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
        def did_change_watched(params: types.DidChangeWatchedFilesParams) -> None:
            changed = False
            for event in params.changes:
                rel = self.rel(event.uri)
                if rel is not None and self.buffers is not None:
                    self.buffers.changed_on_disk(rel)
                    changed = True
            if changed:
                self.schedule()

        self._register_requests()

    def _register_requests(self) -> None:
        """The requests: each answered from the last complete analysis, at once."""
        server = self.server

        @server.feature(types.TEXT_DOCUMENT_HOVER)
        async def hover(params: types.HoverParams) -> types.Hover | None:
            text = await self.hover(params.text_document.uri, params.position)
            if text is None:
                return None
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

        @server.feature(types.TEXT_DOCUMENT_DEFINITION)
        def definition(params: types.DefinitionParams) -> list[types.Location]:
            found = self._at(params.text_document.uri, params.position)
            return [self._location(where) for where in definitions(*found)] if found is not None else []

        @server.feature(types.TEXT_DOCUMENT_REFERENCES)
        def refs(params: types.ReferenceParams) -> list[types.Location]:
            found = self._at(params.text_document.uri, params.position)
            return [self._location(where) for where in references(*found)] if found is not None else []

        @server.feature(
            types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=[":", " ", "-"])
        )
        def complete(params: types.CompletionParams) -> list[types.CompletionItem]:
            rel = self.rel(params.text_document.uri)
            if rel is None:
                return []
            lines = self.server.workspace.get_text_document(params.text_document.uri).lines
            text = [line.rstrip("\r\n") for line in lines]
            line = params.position.line
            column = _characters(text[line] if 0 <= line < len(text) else "", params.position.character)
            found = completions(self.analysis, rel, text, line, column, self._folders())
            return [
                types.CompletionItem(
                    label=item.label,
                    kind=_COMPLETION_KINDS.get(item.kind, types.CompletionItemKind.Text),
                    detail=item.detail or None,
                    documentation=item.documentation or None,
                    insert_text=f"{item.label}: " if item.kind == "field" else item.label,
                )
                for item in found
            ]

        @server.feature(
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionOptions(
                code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Refactor]
            ),
        )
        def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
            uri = params.text_document.uri
            rel = self.rel(uri)
            if rel is None:
                return []
            lines = [line.rstrip("\r\n") for line in self.server.workspace.get_text_document(uri).lines]
            first, last = params.range.start.line, params.range.end.line
            here = [d for d in self.shown.get(rel, []) if first <= d.line - 1 <= last]
            out = []
            for action in actions(self.analysis, rel, lines, first, here):
                edits = [
                    types.TextEdit(
                        range=types.Range(
                            types.Position(e.line, _units(_row(lines, e.line), e.column)),
                            types.Position(e.end_line, _units(_row(lines, e.end_line), e.end_column)),
                        ),
                        new_text=e.text,
                    )
                    for e in action.edits
                ]
                out.append(
                    types.CodeAction(
                        title=action.title,
                        kind=types.CodeActionKind.QuickFix
                        if action.kind == "quickfix"
                        else types.CodeActionKind.Refactor,
                        edit=types.WorkspaceEdit(changes={uri: edits}),
                        diagnostics=[self._diagnostic(action.diagnostic)] if action.diagnostic else None,
                        is_preferred=action.kind == "quickfix" or None,
                    )
                )
            return out

    async def hover(self, uri: str, position: types.Position) -> str | None:
        """The hover text, going through the pairs in steps of :data:`STEP` values: the editor's other
        messages are read in between, and a cancelled request stops at the next step."""
        found = self._at(uri, position)
        if found is None:
            return None
        analysis, rel, line, column = found
        where = hover_spot(analysis, rel, line, column)
        if where is None:
            return None
        named = name_hover(analysis, where)
        if named is not None:
            return named
        seen = []
        for number, value in enumerate(fields_at(analysis, rel, where.path), 1):
            if self.pair is None or value.state.name == self.pair:
                seen.append(value)
            self.steps += 1
            if number % STEP == 0:
                await asyncio.sleep(0)
        return field_hover(seen)

    def _folders(self) -> dict[str, list[str]]:
        """The folders ``clusters/``, ``departments/`` and ``projects/`` hold, by name (completion in
        ``org.yaml``)."""
        found: dict[str, list[str]] = {}
        for top in ("clusters", "departments", "projects"):
            listed = self.buffers.entries(top) if self.buffers is not None else []
            names = [] if isinstance(listed, Unreadable) else [e.name for e in listed if e.kind == "folder"]
            found[top] = sorted(names)
        return found

    def _at(self, uri: str, position: types.Position) -> tuple[Analysis, str, int, int] | None:
        """The last analysis and the place of a request (line and column from 1)."""
        rel = self.rel(uri)
        if rel is None or self.analysis is None:
            return None
        column = _characters(self.line_text(rel, position.line), position.character)
        return self.analysis, rel, position.line + 1, column + 1

    def _location(self, where: Location) -> types.Location:
        line = (where.line or 1) - 1
        column = _units(self.line_text(where.file, line), max((where.column or 1) - 1, 0))
        start = types.Position(line, column)
        return types.Location(uri=self.uri(where.file), range=types.Range(start, start))

    def _buffer(self, uri: str) -> None:
        rel = self.rel(uri)
        if rel is None or self.buffers is None:
            return
        document = self.server.workspace.get_text_document(uri)
        self.buffers.set_buffer(rel, document.source)
        self.schedule()

    # -- recomputation ---------------------------------------------------------------------------------------

    def schedule(self) -> None:
        """Recompute from the buffers as they are now; a recomputation under way is cancelled."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self.settled.clear()
        self._task = asyncio.get_running_loop().create_task(self._recompute())

    async def _recompute(self) -> None:
        try:
            await self._analyse()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug: said in the editor's log, and the server goes on answering
            log.exception("recomputation failed")
            said = f"template-engine lsp: internal error while recomputing: {type(exc).__name__}: {exc}"
            self.server.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=said))
            self.settled.set()

    async def _analyse(self) -> None:
        await asyncio.sleep(0)  # edits that arrive together are one recomputation
        buffers = self.buffers
        if buffers is None:
            self.settled.set()
            return
        try:
            org = load_org(buffers)
        except TemplateEngineError as exc:
            self.load_problems = [
                Diagnostic(
                    p.location.file if p.location is not None else "org.yaml",
                    (p.location.line or 1) if p.location is not None else 1,
                    (p.location.column or 1) if p.location is not None else 1,
                    "error",
                    "files/invalid",
                    p.with_expected(),
                )
                for p in exc.problems
            ]
            self.publish()
            self.settled.set()
            return
        self.load_problems = []
        job = Job(org, self.analysis, self.variables)
        for _ in job.steps():
            await asyncio.sleep(0)  # requests are answered between two pairs
        assert job.result is not None
        self.analysis = job.result
        self.history.append(job.result.composed)
        self.publish()
        self.server.protocol.notify(
            ANALYSED, {"composed": list(job.result.composed), "pairs": len(job.result.pairs)}
        )
        self.settled.set()

    def publish(self) -> None:
        found: dict[str, list[Diagnostic]] = by_file(self.analysis) if self.analysis is not None else {}
        if self.load_problems:
            found = {}
            for diagnostic in self.load_problems:
                found.setdefault(diagnostic.file, []).append(diagnostic)
        self.shown = found
        for rel in sorted(set(found) | self.published):
            diagnostics = [self._diagnostic(d) for d in found.get(rel, [])]
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=self.uri(rel), diagnostics=diagnostics)
            )
        self.published = set(found)

    def line_text(self, rel: str, line: int) -> str:
        """Line ``line`` (from 0) of the file as the loader reads it."""
        text = self.buffers.text(rel) if self.buffers is not None else None
        lines = (text or "").splitlines()
        return lines[line] if 0 <= line < len(lines) else ""

    def _diagnostic(self, found: Diagnostic) -> types.Diagnostic:
        line = found.line - 1
        text = self.line_text(found.file, line)
        start = _units(text, max(found.column - 1, 0))
        end = max(_units(text, len(text)), start + 1)
        related = [
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=self.uri(where.file), range=_line_range((where.line or 1) - 1)),
                message=where.layer or where.place(),
            )
            for where in found.related
        ]
        return types.Diagnostic(
            range=types.Range(types.Position(line, start), types.Position(line, end)),
            message=found.message,
            severity=types.DiagnosticSeverity.Error
            if found.level == "error"
            else types.DiagnosticSeverity.Warning,
            code=found.rule,
            source="template-engine",
            related_information=related or None,
        )


def _row(lines: list[str], line: int) -> str:
    return lines[line] if 0 <= line < len(lines) else ""


def _units(text: str, characters: int) -> int:
    """The column of ``characters`` characters into ``text`` in UTF-16 code units (the protocol's default
    position encoding, which the server announces): a character outside the BMP counts two."""
    return len(text[:characters].encode("utf-16-le")) // 2


def _characters(text: str, units: int) -> int:
    """The inverse of :func:`_units`: how many characters of ``text`` make ``units`` UTF-16 code units."""
    count = 0
    for index, character in enumerate(text):
        if count >= units:
            return index
        count += 2 if ord(character) > 0xFFFF else 1
    return len(text)


def _line_range(line: int) -> types.Range:
    return types.Range(types.Position(line, 0), types.Position(line, 0))


def run(root: Path | None = None, variables: Mapping[str, str] | None = None) -> None:
    """Serve one editor over stdin and stdout until it says ``exit``."""
    OrgServer(root, variables).server.start_io()
