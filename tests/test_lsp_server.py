"""The language server never gets stuck: a newer edit cancels the recomputation under way, requests are
answered from the last complete state while it runs, and a cancelled hover stops at its next step.  The
server object is driven in this process on its own event loop (the protocol's output dropped); what is
counted is work (recomputations completed, values read), never time."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from own_loop import run_in_own_loop

from template_engine.lsp import server as lsp_server
from template_engine.lsp.server import OrgServer

EXAMPLE = Path(__file__).resolve().parents[1] / "templates"
RESEARCH = "departments/research/defaults.yaml"


@pytest.fixture
def org(tmp_path: Path) -> Path:
    root = tmp_path / "templates"
    shutil.copytree(EXAMPLE, root)
    return root


def _server(root: Path) -> OrgServer:
    found = OrgServer(root)
    found.server.text_document_publish_diagnostics = lambda params: None  # type: ignore[method-assign]
    found.server.protocol.notify = lambda *args, **kwargs: None  # type: ignore[method-assign]
    return found


def _edit(server: OrgServer, root: Path, old: str, new: str) -> None:
    assert server.buffers is not None
    text = (root / RESEARCH).read_text("utf-8")
    assert old in text
    server.buffers.set_buffer(RESEARCH, text.replace(old, new))


def _cost_center(server: OrgServer) -> object:
    assert server.analysis is not None
    composition = server.analysis.pairs["projects/vision/vit-finetune"].outcome.composition
    assert composition is not None
    return next(x["value"] for x in composition.combined_spec["labels"] if x["name"] == "cost-center")


def test_a_newer_edit_cancels_the_recomputation_under_way(org: Path) -> None:
    async def scenario() -> None:
        server = _server(org)
        server.schedule()
        await server.settled.wait()
        assert len(server.history) == 1
        _edit(server, org, "cc-2100", "cc-2200")
        server.schedule()
        for _ in range(4):  # the recomputation is under way: loaded, some pairs composed
            await asyncio.sleep(0)
        assert not server.settled.is_set()
        _edit(server, org, "cc-2100", "cc-2300")
        server.schedule()  # the first is cancelled: its state is never published
        await server.settled.wait()
        assert len(server.history) == 2
        assert _cost_center(server) == "cc-2300"

    run_in_own_loop(scenario())


def test_requests_are_answered_from_the_last_state_while_it_recomputes(org: Path) -> None:
    async def scenario() -> None:
        server = _server(org)
        server.schedule()
        await server.settled.wait()
        _edit(server, org, "cc-2100", "cc-2200")
        server.schedule()
        for _ in range(3):
            await asyncio.sleep(0)
        assert not server.settled.is_set()  # still recomputing
        text = await server.hover((org / RESEARCH).as_uri(), types.Position(5, 4))
        assert text is not None and '`"cc-2100"`' in text  # the last complete state's value
        assert not server.settled.is_set()
        await server.settled.wait()
        text = await server.hover((org / RESEARCH).as_uri(), types.Position(5, 4))
        assert text is not None and '`"cc-2100"`' not in text  # the buffer's line 6 holds cc-2200 now
        assert _cost_center(server) == "cc-2200"

    run_in_own_loop(scenario())


def test_a_cancelled_hover_stops_at_its_next_step(org: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lsp_server, "STEP", 1)

    async def scenario() -> None:
        server = _server(org)
        server.schedule()
        await server.settled.wait()
        where = ((org / RESEARCH).as_uri(), types.Position(5, 4))
        whole = await server.hover(*where)
        assert whole is not None
        total, server.steps = server.steps, 0
        assert total >= 8  # the 8 pairs of research, and the masters that have their own spec
        request = asyncio.get_running_loop().create_task(server.hover(*where))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        assert 0 < server.steps < total

    run_in_own_loop(scenario())


def test_a_broken_org_yaml_is_a_diagnostic_and_a_bug_is_logged_not_a_hang(
    org: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        server = _server(org)
        published: list[types.PublishDiagnosticsParams] = []
        logged: list[types.LogMessageParams] = []
        server.server.text_document_publish_diagnostics = published.append  # type: ignore[method-assign]
        server.server.window_log_message = logged.append  # type: ignore[method-assign]
        assert server.buffers is not None
        server.buffers.set_buffer("org.yaml", "departments: [unclosed\n")
        server.schedule()
        await server.settled.wait()
        (found,) = [p for p in published if p.uri.endswith("/org.yaml")]
        assert found.diagnostics and found.diagnostics[0].severity == types.DiagnosticSeverity.Error
        server.buffers.close_buffer("org.yaml")

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("a bug")

        monkeypatch.setattr(lsp_server, "Job", broken)
        server.schedule()
        await server.settled.wait()
        assert [m.message for m in logged] == [
            "template-engine lsp: internal error while recomputing: RuntimeError: a bug"
        ]

    run_in_own_loop(scenario())


def test_without_the_lsp_extra_the_command_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from click.testing import CliRunner

    from template_engine.cli import main
    from template_engine.lsp import commands

    real = commands.importlib.import_module

    def missing(name: str) -> object:
        if name == "pygls":
            raise ImportError(name)
        return real(name)

    monkeypatch.setattr(commands.importlib, "import_module", missing)
    result = CliRunner().invoke(main, ["lsp"])
    assert result.exit_code == 2
    assert result.stderr == (
        "error: the language server is not installed: install the lsp extra: pip install '.[lsp]' from a "
        "checkout (or template-engine[lsp]); missing: pygls\n"
    )


@pytest.mark.parametrize(
    ("text", "characters", "units"),
    [("abc", 2, 2), ("é: x", 3, 3), ("🚀: x", 1, 2), ("🚀: x", 3, 4), ("a🚀b", 3, 4), ("", 0, 0)],
)
def test_columns_are_utf_16_units_on_the_wire(text: str, characters: int, units: int) -> None:
    assert lsp_server._units(text, characters) == units
    assert lsp_server._characters(text, units) == characters
