"""``template-engine lsp`` over the real protocol: the server a subprocess on stdio, driven by pygls' own
JSON-RPC client (``pygls.lsp.client``).

The scenario of issue 34: open the example org, edit a department default so that a project's template is
no longer runnable, see the diagnostic at the edited line with the pairs it affects, the hover chain across
the layers and the definition locations in each; undo the edit and see the diagnostic go.  What is counted
is work (the pairs a recomputation composed, from the server's ``$/templateEngine/analysed``), never time.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from lsprotocol import types
from own_loop import run_in_own_loop
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]
ANALYSED = "$/templateEngine/analysed"
#: How long one wait for the server may take before the test fails (a hang, not a speed check).
PATIENCE = 15

#: A toleration whose effect the system policy does not allow, appended to the research defaults.
BAD_TOLERATION = """\
  tolerations:
  - name: gpu-maintenance
    key: maintenance
    operator: Exists
    effect: NoExecute
"""
#: A value set by every layer of vision/vit-finetune: the system defaults set it to 60; research, vision
#: defaults and the template (below) set it again.
CHAIN = {
    "departments/research/defaults.yaml": "  terminationGracePeriodSeconds: 40\n",
    "projects/vision/defaults.yaml": "  terminationGracePeriodSeconds: 50\n",
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


class Editor:
    """A client of the server under test: what it was sent, and a queue of the recomputations."""

    def __init__(self) -> None:
        self.client = LanguageClient("template-engine-tests", "1")
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}
        self.analysed: asyncio.Queue[Any] = asyncio.Queue()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = list(params.diagnostics)

        @self.client.feature(ANALYSED)
        def analysed(params: Any) -> None:
            self.analysed.put_nowait(params)

        self.registered: list[str] = []

        @self.client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            self.registered += [r.method for r in params.registrations]

    async def next_analysis(self) -> Any:
        return await asyncio.wait_for(self.analysed.get(), PATIENCE)


def drive(
    scenario: Callable[[Editor], Awaitable[None]],
    *args: str,
    options: dict[str, Any] | None = None,
    capabilities: types.ClientCapabilities | None = None,
) -> None:
    """Start ``template-engine lsp`` (with ``args``), initialise it (with ``options``, its
    ``initializationOptions``), run ``scenario``, shut it down."""

    async def run() -> None:
        editor = Editor()
        client = editor.client
        await client.start_io(sys.executable, "-m", "template_engine", "lsp", *args, env=_env())
        try:
            await asyncio.wait_for(
                client.initialize_async(
                    types.InitializeParams(
                        capabilities=capabilities or types.ClientCapabilities(),
                        initialization_options=options,
                    )
                ),
                PATIENCE,
            )
            client.initialized(types.InitializedParams())
            await scenario(editor)
            await asyncio.wait_for(client.shutdown_async(None), PATIENCE)
            client.exit(None)
        except BaseException:
            if client._server is not None and client._server.returncode is None:
                client._server.kill()  # a failed scenario leaves the server running: stop it here
            raise
        finally:
            await asyncio.wait_for(client.stop(), PATIENCE)

    run_in_own_loop(run())


@pytest.fixture
def org(tmp_path: Path) -> Path:
    root = tmp_path / "templates"
    shutil.copytree(REPO / "templates", root)
    for file, line in CHAIN.items():
        path = root / file
        path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")
    template = root / "projects/vision/templates/vit-finetune.yaml"
    text = template.read_text(encoding="utf-8")
    template.write_text(
        text.replace("  numWorkers: 2\n", "  numWorkers: 2\n  terminationGracePeriodSeconds: 60\n")
    )
    return root


def _open(editor: Editor, path: Path) -> str:
    uri = path.as_uri()
    editor.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=path.read_text("utf-8"))
        )
    )
    return uri


def _change(editor: Editor, uri: str, version: int, text: str) -> None:
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def _line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines()) if needle in line)


def _file(uri: str, org: Path) -> str:
    return Path(unquote(urlparse(uri).path)).relative_to(org).as_posix()


#: The pairs that use the research defaults: vision's four, nlp's three, research's own template.
RESEARCH_PAIRS = sorted(
    [
        "departments/research/jupyter-lab",
        "departments/research/tf-parameter-server",
        *(
            f"projects/nlp/{t}"
            for t in ("jupyter-lab", "llm-serve", "mpi-horovod", "pytorch-elastic", "tf-parameter-server")
        ),
        *(
            f"projects/vision/{t}"
            for t in (
                "hpo-sweep",
                "jupyter-lab",
                "mpi-horovod",
                "pytorch-elastic",
                "tf-parameter-server",
                "vit-finetune",
            )
        ),
    ]
)


def test_an_edit_of_a_department_default_shows_where_it_breaks_pairs_and_undo_clears_it(org: Path) -> None:
    research = org / "departments/research/defaults.yaml"
    saved = research.read_text("utf-8")
    edited = saved + BAD_TOLERATION

    async def scenario(editor: Editor) -> None:
        uri = _open(editor, research)
        first = await editor.next_analysis()
        assert len(first.composed) == first.pairs == 23  # the first load composes every pair
        assert not [d for d in editor.diagnostics.get(uri, []) if "NoExecute" in d.message]

        _change(editor, uri, 2, edited)  # unsaved: the file on disk is unchanged
        after = await editor.next_analysis()
        assert sorted(after.composed) == RESEARCH_PAIRS  # only the pairs that use the edited file
        found = [d for d in editor.diagnostics[uri] if "NoExecute" in d.message]
        assert len(found) == 1, editor.diagnostics[uri]
        diagnostic = found[0]
        assert diagnostic.range.start.line == _line_of(edited, "effect: NoExecute")
        assert diagnostic.severity == types.DiagnosticSeverity.Error
        assert "not runnable in 8 of 13 pairs: nlp/mpi-horovod, nlp/pytorch-elastic" in diagnostic.message
        assert "and 3 more" in diagnostic.message

        _change(editor, uri, 3, saved)  # undo: the diagnostic goes
        await editor.next_analysis()
        assert not [d for d in editor.diagnostics.get(uri, []) if "NoExecute" in d.message]

    drive(scenario)


def test_hover_shows_the_chain_system_department_project_template_and_definition_each_layer(
    org: Path,
) -> None:
    research = org / "departments/research/defaults.yaml"
    line = _line_of(research.read_text("utf-8"), "terminationGracePeriodSeconds: 40")

    async def scenario(editor: Editor) -> None:
        uri = _open(editor, research)
        await editor.next_analysis()
        where = types.Position(line, 4)
        hover = await editor.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), where)
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        text = hover.contents.value
        assert "`terminationGracePeriodSeconds`" in text
        chain = (
            "system defaults (`system/defaults.yaml:",
            "department research defaults (`departments/research/defaults.yaml:",
            "project vision defaults (`projects/vision/defaults.yaml:",
            "template vit-finetune (`projects/vision/templates/vit-finetune.yaml:",
        )
        rows = [row for row in text.splitlines() if all(part in row for part in chain)]
        assert rows, text
        assert [rows[0].index(part) for part in chain] == sorted(rows[0].index(part) for part in chain)
        assert "overrode `60` of system defaults" in text
        assert "overridden by template vit-finetune" in text
        # vision's defaults override it in vision's other three pairs, the template in its own; nlp's three
        # pairs and research's own template keep this value.
        assert re.search(r"Overridden by `projects/vision/defaults.yaml:\d+` in 5 of 13 pairs", text), text
        assert re.search(r"Overridden by `projects/vision/templates/vit-finetune.yaml:\d+` in 1 of 13", text)
        assert "(6 of 13): `40`, set by department research defaults" in text

        definition = await editor.client.text_document_definition_async(
            types.DefinitionParams(types.TextDocumentIdentifier(uri), where)
        )
        assert isinstance(definition, list)
        places = [(_file(d.uri, org), d.range.start.line) for d in definition]
        assert [file for file, _ in places] == [
            "system/defaults.yaml",
            "departments/research/defaults.yaml",
            "projects/vision/defaults.yaml",
            "projects/vision/templates/vit-finetune.yaml",
        ]
        for file, at in places:
            assert "terminationGracePeriodSeconds" in (org / file).read_text("utf-8").splitlines()[at]

        # The pair the user picks: hover shows only it.
        picked = await editor.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="templateEngine.pickPair", arguments=["vision/vit-finetune"])
        )
        assert picked == "vision/vit-finetune"
        hover = await editor.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), where)
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        rows = [row for row in hover.contents.value.splitlines() if row.startswith("- vision/")]
        assert len(rows) == 1, rows  # the template sets 60 again in its own pair
        assert rows[0].startswith("- vision/vit-finetune (1 of 1): `60`, overridden by template vit-finetune")

    drive(scenario)


def test_completion_and_code_actions_over_the_protocol(org: Path) -> None:
    vision = org / "projects/vision/defaults.yaml"
    text = vision.read_text("utf-8")
    typed = text + "  imagePullPolicy: "

    async def scenario(editor: Editor) -> None:
        uri = _open(editor, vision)
        await editor.next_analysis()
        _change(editor, uri, 2, typed)
        await editor.next_analysis()
        last = len(typed.split("\n")) - 1
        found = await editor.client.text_document_completion_async(
            types.CompletionParams(
                types.TextDocumentIdentifier(uri), types.Position(last, len(typed.split("\n")[last]))
            )
        )
        items = found if isinstance(found, list) else found.items if found is not None else []
        assert [item.label for item in items] == ["Always", "Never", "IfNotPresent"]
        at = _line_of(typed, "  labels:")
        actions = await editor.client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(uri),
                types.Range(types.Position(at, 0), types.Position(at, 0)),
                types.CodeActionContext(diagnostics=[]),
            )
        )
        assert actions is not None
        titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
        assert "Exclude labels[name=org] here (from system defaults, in vision/hpo-sweep)" in titles
        exclude = next(
            a for a in actions if isinstance(a, types.CodeAction) and a.title.startswith("Exclude")
        )
        assert exclude.edit is not None and exclude.edit.changes is not None
        (edit,) = exclude.edit.changes[uri]
        assert edit.range.start == types.Position(at + 1, 0)
        assert edit.new_text.endswith("exclude: true\n")

    drive(scenario)


def test_the_pair_picked_at_initialization_is_the_one_hover_shows(org: Path) -> None:
    research = org / "departments/research/defaults.yaml"
    line = _line_of(research.read_text("utf-8"), "terminationGracePeriodSeconds: 40")

    async def scenario(editor: Editor) -> None:
        uri = _open(editor, research)
        await editor.next_analysis()
        hover = await editor.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, 4))
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        rows = [row for row in hover.contents.value.splitlines() if row.startswith("- ")]
        assert rows[0].startswith("- nlp/tf-parameter-server (1 of 1): `40`, set by department research")

    drive(scenario, "--root", str(org), options={"pair": "nlp/tf-parameter-server"})


def test_a_file_changed_on_disk_is_read_again_when_the_client_says_so(org: Path) -> None:
    research = org / "departments/research/defaults.yaml"
    vision = org / "projects/vision/defaults.yaml"

    async def scenario(editor: Editor) -> None:
        uri = _open(editor, research)
        await editor.next_analysis()
        # Asked for at initialization (before the first analysis was sent: messages arrive in order).
        assert editor.registered == ["workspace/didChangeWatchedFiles"]
        vision.write_text(vision.read_text("utf-8").replace("a100-80gb", "a100-40gb"), encoding="utf-8")
        editor.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=vision.as_uri(), type=types.FileChangeType.Changed)]
            )
        )
        after = await editor.next_analysis()
        assert sorted(after.composed) == [
            f"projects/vision/{t}"
            for t in (
                "hpo-sweep",
                "jupyter-lab",
                "mpi-horovod",
                "pytorch-elastic",
                "tf-parameter-server",
                "vit-finetune",
            )
        ]
        assert uri

    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)
        )
    )
    drive(scenario, capabilities=capabilities)
