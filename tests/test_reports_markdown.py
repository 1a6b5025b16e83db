"""``diff -o markdown``: a pull-request comment of a real change to the example org."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from reports_helpers import EXAMPLE, run

from template_engine import load_org
from template_engine.diff import diff_orgs
from template_engine.loader.sources import FolderSource
from template_engine.reports import markdown
from template_engine.reports.markdown import diff_markdown, inert


@pytest.fixture
def changed(tmp_path: Path) -> Path:
    """The example org where the system MPI template no longer moves the datasets mount (5 pairs change,
    2 of them turn runnable) and the system defaults give one more label, with a ``|`` in its value."""
    root = tmp_path / "templates"
    shutil.copytree(EXAMPLE, root)
    template = root / "system" / "templates" / "mpi-horovod.yaml"
    template.write_text(
        template.read_text(encoding="utf-8").replace(
            "containerPath: /mnt/datasets", "containerPath: /datasets"
        ),
        encoding="utf-8",
    )
    return root


def _comment(root: Path) -> str:
    result = run("diff", "--root", str(root), "--against", str(EXAMPLE), "--no-cache", "-o", "markdown")
    assert result.exit_code == 1  # as text: something differs
    return result.stdout


def test_summary_table_and_field_changes(changed: Path) -> None:
    text = _comment(changed)
    lines = text.splitlines()
    assert lines[0] == f"### template-engine diff against <code>{EXAMPLE}</code>"
    assert lines[2] == "5 of 23 pairs differ: 5 changed"
    table = [
        line for line in lines if line.startswith("| <code>projects/") or line.startswith("| <code>system/")
    ]
    assert len(table) == 5
    assert (
        "| <code>projects/nlp/mpi-horovod</code> | system | changed | not runnable → runnable | 3 | 2 |"
        in lines
    )
    assert "| <code>projects/recsys/mpi-horovod</code> | system | changed | runnable | 1 | 2 |" in lines
    # the field path's brackets are written as references: a path, like a value, is the org's text
    row = next(
        line for line in lines if line.startswith("| <code>combinedSpec.storage.nfs&#91;name=datasets&#93;")
    )
    assert '<code>"/mnt/datasets"</code> | <code>"/datasets"</code>' in row
    assert "system/templates/mpi-horovod.yaml:14" in row
    assert text.count("#### ") == 5
    assert "<details>" not in text  # nothing longer than FOLD rows


def test_long_lists_fold_in_details(changed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(markdown, "FOLD", 2)
    text = _comment(changed)
    assert "<details><summary>5 pairs differ</summary>" in text
    assert "<details><summary>3 field changes</summary>" in text
    assert text.count("<details>") == text.count("</details>")
    assert "**2 cluster object changes**" in text  # two rows: not folded


def test_cells_cannot_break_the_table(changed: Path) -> None:
    defaults = changed / "system" / "defaults.yaml"
    defaults.write_text(
        defaults.read_text(encoding="utf-8").replace("value: cc-1000", "value: cc|1000 <b>"), encoding="utf-8"
    )
    result = diff_orgs(load_org(FolderSource(EXAMPLE)), load_org(FolderSource(changed)))
    text = diff_markdown(result, "main")
    assert result.summary_line() in text
    rows = [line for line in text.splitlines() if "cc&#124;1000" in line]
    fields = [row for row in rows if row.startswith("| <code>combinedSpec")]
    objects = [row for row in rows if not row.startswith("| <code>combinedSpec")]
    assert fields and objects
    assert all(row.count("|") == 6 for row in fields)  # five cells: the | of the value is escaped
    assert all(row.count("|") == 5 for row in objects)  # four cells
    assert "&lt;b&gt;" in rows[0] and "<b>" not in text


def test_nothing_differs() -> None:
    result = run("diff", "--root", str(EXAMPLE), "--against", str(EXAMPLE), "--no-cache", "-o", "markdown")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[2] == "no pair differs (23 pairs)"
    assert "| pair |" not in result.stdout


HOSTILE = "@octocat [click](https://evil.example) **bold** #123 <img src=x onerror=alert(1)> www.evil.example"


def test_a_hostile_value_mentions_nobody_and_links_nothing(changed: Path) -> None:
    """GitHub renders Markdown inside ``<code>`` and table cells: a value must not ping, link nor format."""
    defaults = changed / "system" / "defaults.yaml"
    defaults.write_text(
        defaults.read_text(encoding="utf-8").replace("value: UTC", f"value: '{HOSTILE}'"),
        encoding="utf-8",
    )
    text = _comment(changed)
    rows = [line for line in text.splitlines() if "octocat" in line]
    assert rows  # the value is in the comment...
    for row in rows:  # ...and inert
        assert "@octocat" not in row and "@&#8203;octocat" in row
        assert "](" not in row and "[click" not in row
        assert "**" not in row
        assert "#123" not in row and "#&#8203;123" in row
        assert "://" not in row and "www." not in row
        assert "<img" not in row and "&lt;img" in row


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("@octocat", "@&#8203;octocat"),
        ("owner/repo#7", "owner/repo#&#8203;7"),
        ("[a](b)", "&#91;a&#93;&#40;b&#41;"),
        ("![x](y)", "!&#91;x&#93;&#40;y&#41;"),
        ("*a* _b_ ~~c~~ `d`", "&#42;a&#42; &#95;b&#95; &#126;&#126;c&#126;&#126; &#96;d&#96;"),
        ("https://x.example", "https:/&#8203;/x.example"),
        ("WWW.x.example", "WWW&#8203;.x.example"),
        ("a@b.example", "a@&#8203;b.example"),
        ("<b>&</b>", "&lt;b&gt;&amp;&lt;/b&gt;"),
        ("a|b\nc", "a&#124;b<br>c"),
        ("\\*", "&#92;&#42;"),
        ('/mnt/data-sets "x" 1.5', '/mnt/data-sets "x" 1.5'),  # plain text stays as it is
    ],
)
def test_inert_neutralises_markdown_mentions_references_autolinks_and_html(text: str, written: str) -> None:
    assert inert(text) == written
