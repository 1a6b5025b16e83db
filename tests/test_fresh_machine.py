"""What a newcomer copies from the README and the docs works on a fresh machine (issue 31): the test command
installs what the suite needs, CI runs exactly that command, no page installs a package that is not on PyPI,
and no test reads a file outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_COMMAND = "scripts/test"


def _fenced(markdown: str) -> list[str]:
    return re.findall(r"```(?:sh|console|yaml)?\n(.*?)```", markdown, flags=re.S)


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("Install the test dependencies and run the whole test suite") :]
    assert _fenced(section)[0].strip() == TEST_COMMAND
    ci = (ROOT / ".ci" / "run").read_text()
    lines = [line.strip() for line in ci.splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    assert TEST_COMMAND in commands


def test_the_test_command_installs_what_the_suite_needs() -> None:
    """The browser tests need Chromium, the replica tests HAProxy: the script installs both when missing,
    then the test extra, then runs pytest with the arguments it was given."""
    script = ROOT / TEST_COMMAND
    assert script.stat().st_mode & 0o111, "scripts/test is not executable"
    text = script.read_text()
    for program, package in (("chromium", "chromium"), ("haproxy", "haproxy")):
        assert f"command -v {program}" in text
        assert f"missing+=({package}" in text
    assert "apt-get install" in text
    assert ".venv/bin/pip install -e '.[test]'" in text
    assert text.rstrip().endswith('exec .venv/bin/pytest "$@"')


def test_no_page_installs_the_engine_from_pypi() -> None:
    """``template-engine`` is not on PyPI: a copied CI job that runs ``pip install template-engine`` fails,
    or one day installs someone else's package."""
    bare = re.compile(r"pip install +['\"]?template-engine(\[[a-z,]+\])?['\"]?\s*$")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "templates" / "README.md"]
    found = [
        f"{page.relative_to(ROOT)}: {line.strip()}"
        for page in pages
        for block in _fenced(page.read_text())
        for line in block.splitlines()
        if bare.search(line.split("#")[0].rstrip())
    ]
    assert found == []


def test_no_test_reads_outside_the_repository() -> None:
    """The copies of ``../shared`` that tests read are checked into ``tests/fixtures`` (``.ci/run`` holds them
    equal); a test that reads ``../shared`` itself fails in a clone without it."""
    outside = re.compile(r"""parents\[\d+\] */ *["']shared["']|["']\.\./shared""")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path.name != Path(__file__).name
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if outside.search(line)
    ]
    assert found == []
