"""``template-engine serve`` and ``template-engine db import|export`` as commands."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import ADMIN, TEMPLATES
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.cli import main

#: Run the CLI with the service's dependencies made unimportable, as without the ``service`` extra.
WITHOUT_SERVICE = """
import sys
for name in ("fastapi", "uvicorn", "sqlalchemy", "starlette", "psycopg"):
    sys.modules[name] = None
from template_engine.cli import main
sys.argv = ["template-engine", *sys.argv[1:]]
main()
"""


def _without_service(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SERVICE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_serve_without_the_extra_says_what_to_install() -> None:
    result = _without_service("serve")
    assert result.returncode == 2
    assert "install the service extra" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert _without_service("db", "import").returncode == 2


def test_the_core_cli_works_without_the_extra() -> None:
    assert _without_service("--help").returncode == 0
    result = _without_service("validate", "--root", str(TEMPLATES))
    assert result.returncode == 0, result.stderr
    assert "serve" in _without_service("--help").stdout


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_serve_needs_an_auth_file(runner: CliRunner, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    result = runner.invoke(main, ["serve", "--database-url", url], env={"TEMPLATE_ENGINE_AUTH_FILE": None})
    assert result.exit_code == 2
    assert "no auth file" in result.output


def test_serve_with_a_bad_auth_file(runner: CliRunner, tmp_path: Path) -> None:
    auth = tmp_path / "auth.yaml"
    auth.write_text(f"tokens:\n  - {{subject: a, token: {ADMIN}, role: emperor}}\n")
    result = runner.invoke(
        main, ["serve", "--database-url", f"sqlite:///{tmp_path / 'x.db'}", "--auth-file", str(auth)]
    )
    assert result.exit_code == 2
    assert "tokens[0].role" in result.output and ADMIN not in result.output


@pytest.mark.parametrize("url", ["nonsense://", "postgresql+psycopg://nobody@127.0.0.1:1/none"])
def test_serve_with_an_unusable_database(runner: CliRunner, auth_file: Path, url: str) -> None:
    result = runner.invoke(main, ["serve", "--database-url", url, "--auth-file", str(auth_file)])
    assert result.exit_code == 2
    assert "database" in result.output and "Traceback" not in result.output


def test_serve_with_a_broken_seed(runner: CliRunner, auth_file: Path, tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    shutil.copytree(TEMPLATES, seed)
    (seed / "org.yaml").write_text("departments: 3\n")
    url = f"sqlite:///{tmp_path / 'x.db'}"
    result = runner.invoke(
        main, ["serve", "--database-url", url, "--auth-file", str(auth_file), "--seed", str(seed)]
    )
    assert result.exit_code == 2
    assert "cannot seed" in result.output and "org.yaml" in result.output


def test_db_import_and_export(runner: CliRunner, tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    imported = runner.invoke(main, ["db", "import", "--root", str(TEMPLATES)], env=env)
    assert imported.exit_code == 0, imported.output
    assert "10 added, 0 replaced templates" in imported.output
    again = runner.invoke(main, ["db", "import", "--root", str(TEMPLATES)], env=env)
    assert "0 added, 10 replaced templates" in again.output
    out = tmp_path / "out"
    exported = runner.invoke(main, ["db", "export", "--root", str(out)], env=env)
    assert exported.exit_code == 0, exported.output
    assert (out / "org.yaml").is_file() and (out / "projects/vision/templates/vit-finetune.yaml").is_file()
    refused = runner.invoke(main, ["db", "export", "--root", str(out)], env=env)
    assert refused.exit_code == 2 and "--overwrite" in refused.output
    (out / "README.md").write_text("kept")
    replaced = runner.invoke(main, ["db", "export", "--root", str(out), "--overwrite"], env=env)
    assert replaced.exit_code == 0 and (out / "README.md").read_text() == "kept"
    assert runner.invoke(main, ["validate", "--root", str(out)]).exit_code == 0


def _without_comments(text: str) -> list[str]:
    """The lines of a YAML text without its comments: whole comment lines, and a comment after a value (two
    spaces or more, then ``#``: how the example org writes one), which a database does not keep."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return [re.sub(r"\s{2,}#.*$", "", line).rstrip() for line in lines]


def test_db_export_writes_the_example_org_as_it_was_written_but_its_comments(
    runner: CliRunner, tmp_path: Path
) -> None:
    """Issue 31: ``db export`` after ``db import`` diffs against the folder it came from by its comments
    only: no line folded (long descriptions, expressions), text plain where it was plain and quoted where it
    was quoted (an expression in single quotes, or in double quotes when it holds a single quote)."""
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    assert runner.invoke(main, ["db", "import", "--root", str(TEMPLATES)], env=env).exit_code == 0
    out = tmp_path / "out"
    assert runner.invoke(main, ["db", "export", "--root", str(out)], env=env).exit_code == 0
    originals = sorted(p.relative_to(TEMPLATES) for p in TEMPLATES.rglob("*.yaml"))
    assert originals == sorted(
        p.relative_to(out) for p in out.rglob("*.yaml") if ".template-engine" not in p.parts
    )
    for rel in originals:
        before, after = (TEMPLATES / rel).read_text(), (out / rel).read_text()
        assert yaml.safe_load(after) == yaml.safe_load(before), rel
        # policies and cluster.yaml are stored with their text: written back as they were
        assert after.splitlines() in (before.splitlines(), _without_comments(before)), rel


def test_db_import_of_a_broken_folder(runner: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(TEMPLATES, folder)
    (folder / "assets/computes/a100-x1.yaml").write_text("meta:\n  name: a100-x1\nspec:\n  image: nope\n")
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    result = runner.invoke(main, ["db", "import", "--root", str(folder), "--database-url", url])
    assert result.exit_code == 2
    assert "nothing imported" in result.output and "assets/computes/a100-x1.yaml" in result.output
    assert not (tmp_path / "db.sqlite").exists()  # the folder is refused before a database is created
    assert (
        runner.invoke(
            main, ["db", "import", "--root", str(tmp_path / "absent"), "--database-url", url]
        ).exit_code
        == 2
    )


def test_db_import_and_validate_read_nothing_a_link_leads_to_outside_the_root(
    runner: CliRunner, tmp_path: Path
) -> None:
    """A template linked from outside ``--root`` is refused by ``validate`` and ``db import`` (nothing
    imported, no database created), naming the file, where it leads and what was expected."""
    folder = tmp_path / "linked"
    shutil.copytree(TEMPLATES, folder)
    moved = tmp_path / "outside.yaml"
    (folder / "projects/vision/templates/vit-finetune.yaml").rename(moved)
    (folder / "projects/vision/templates/vit-finetune.yaml").symlink_to(moved)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    expected = (
        "error: cannot read file: a symbolic link leads outside the templates folder, to "
        f"{moved.resolve()}\n    in: projects/vision/templates/vit-finetune.yaml\n    expected: a file or "
        "folder inside the templates folder (a symbolic link is followed only to a path inside it)\n"
    )
    imported = runner.invoke(main, ["db", "import", "--root", str(folder), "--database-url", url])
    assert imported.exit_code == 2 and "nothing imported" in imported.output
    assert expected in imported.output
    assert not (tmp_path / "db.sqlite").exists()
    validated = runner.invoke(main, ["validate", "--root", str(folder)])
    assert validated.exit_code == 1 and expected in validated.output


def test_db_export_from_a_missing_sqlite_file_creates_nothing(runner: CliRunner, tmp_path: Path) -> None:
    missing = tmp_path / "typo.sqlite"
    result = runner.invoke(
        main, ["db", "export", "--root", str(tmp_path / "out"), "--database-url", f"sqlite:///{missing}"]
    )
    assert result.exit_code == 2
    assert "does not exist" in result.output
    assert not missing.exists()
    assert not (tmp_path / "out").exists()


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab {}%'\"\\:#-|>!&*@`x1\t\u0085é")), max_size=120))
def test_an_exported_text_reads_back_as_itself_on_the_line_of_its_key(text: str) -> None:
    """Issue 31: whatever a value holds, ``db export`` writes it so that it reads back as itself, and a value
    without a line break stays on one line, however long (expressions and descriptions are not folded)."""
    from template_engine.service.yamltext import dump_yaml

    long = "{{ x }} " * 30 + text
    for value in (text, long):
        written = dump_yaml({"k": value})
        assert yaml.safe_load(written) == {"k": value}
        if not any(c in value for c in "\n\r\u0085\u2028\u2029"):
            assert len(written.splitlines()) == 1, written


def test_serve_logging_set_up_in_process_is_put_back() -> None:
    """``serve``'s logging set-up run in a test's process (as CliRunner runs it) is undone by kept_logging,
    which tests/conftest.py wraps every test in: the ``template_engine`` logger back at its level, with its
    handlers, and no handler left writing to a stream the test has finished with."""
    import logging

    from kept_logging import kept_logging

    from template_engine.service.access_log import log_config
    from template_engine.service.commands import _logging

    logger = logging.getLogger("template_engine")
    before = (logger.level, list(logger.handlers), logger.propagate)
    with kept_logging():
        _logging(log_config("json", "info"))
        assert logger.level == logging.INFO and not logger.propagate  # what serve sets up
    assert (logger.level, list(logger.handlers), logger.propagate) == before
    assert logger.getEffectiveLevel() > logging.INFO  # an access line is not even made into a record
