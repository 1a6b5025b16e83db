"""``template-engine report`` through the installed command: the index and one page per pair, ``--against`` a
git revision of a temporary repository, and the folder replaced only when the new report is complete."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "templates"
EXE = shutil.which("template-engine", path=str(Path(sys.executable).parent)) or "template-engine"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, check=False)


class Links(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: dict[str, str] = {}
        self.hrefs: list[str] = []
        self._pair: str | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "tr" and found.get("data-pair"):
            self._pair = found["data-pair"]
            self.rows[self._pair or ""] = found.get("class") or ""
        if tag == "a" and found.get("href") and not (found.get("href") or "").startswith("#"):
            self.hrefs.append(found["href"] or "")


def check_results(root: Path) -> list[dict[str, object]]:
    done = run("check", "--root", str(root), "-o", "json")
    assert done.returncode in (0, 1), done.stderr
    results: list[dict[str, object]] = json.loads(done.stdout)["results"]
    return results


@pytest.fixture(scope="module")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "site"
    done = run("report", "--root", str(EXAMPLE), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote 28 page(s) to {out}: 23 pair(s), 20 runnable, 3 not runnable")
    return out


def test_the_index_lists_every_pair_with_its_status(example_report: Path) -> None:
    index = (example_report / "index.html").read_text(encoding="utf-8")
    links = Links(index)
    results = check_results(EXAMPLE)
    assert len(links.rows) == len(results) == 23
    for result in results:
        project, department, template = result["project"], result["department"], result["template"]
        pair = f"projects/{project}/{template}" if project else f"departments/{department}/{template}"
        if project is None and department is None:
            pair = f"system/{template}"
        assert pair in links.rows, pair
        assert ("ok" if result["isRunnable"] else "bad") in links.rows[pair].split()
    assert "20 runnable, 3 not runnable" in index
    row = index.split('data-pair="projects/speech/asr-sweep-draft"', 1)[1].split("</tr>", 1)[0]
    assert "not runnable" in row and "3 policy issue(s)" in row
    assert "compliant" in index.split('data-pair="projects/vision/vit-finetune"', 1)[1].split("</tr>", 1)[0]


def test_every_link_of_the_index_is_a_page(example_report: Path) -> None:
    links = Links((example_report / "index.html").read_text(encoding="utf-8"))
    assert len(links.hrefs) == 23 + 4  # every pair's page, and each project's "Where kinds differ"
    for href in links.hrefs:
        page = example_report / unquote(href)
        assert page.is_file(), href
        html = page.read_text(encoding="utf-8")
        back = Links(html).hrefs[0]
        assert (page.parent / back).resolve() == (example_report / "index.html").resolve()
    assert (example_report / ".template-engine-report").is_file()


def test_a_page_shows_the_explain_view(example_report: Path) -> None:
    html = (example_report / "pairs/projects/vision/vit-finetune.html").read_text(encoding="utf-8")
    assert "vit-finetune <small>as seen from project vision (department research)</small>" in html
    # The value explain credits to the environment asset, with its file and line in the hover text.
    explained = subprocess.run(
        [EXE, "explain", "--root", str(EXAMPLE), "-p", "vision", "-t", "vit-finetune", "image", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    entry = json.loads(explained.stdout)["entries"][0]
    place = f"{entry['file']}:{entry['line']}"
    assert 'data-field="image" data-layer="environment"' in html
    assert f"set by {entry['layer']}, {place}" in html
    assert "defaultFrom rule of the department research policy" in html
    # The department excludes HTTPS_PROXY: struck through, with the layer.
    assert 'class="node excluded k-department" data-field="environmentVariables[name=HTTPS_PROXY]"' in html
    assert "Changes against" not in html


def test_a_pair_with_a_compliance_issue_marks_its_field(example_report: Path) -> None:
    html = (example_report / "pairs/projects/speech/asr-sweep-draft.html").read_text(encoding="utf-8")
    assert 'class="node value k-template has-issue" data-field="compute.gpuRequestType"' in html
    assert "policy rule options, projects/speech/policy.yaml:5" in html
    assert 'class="node missing k-none has-issue" data-field="image"' in html


class ObjectValues(HTMLParser):
    """The manifests tab of a page: each object path with its value and the text label next to it."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.values: dict[str, tuple[str, str]] = {}
        self._path: list[str] = []
        self._in: str | None = None
        self._value = ""
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "li" and found.get("data-object-path"):
            self._path.append(found["data-object-path"] or "")
        classes = (found.get("class") or "").split()
        if tag == "span" and self._path and ("val" in classes or "badge" in classes):
            self._in = "val" if "val" in classes else "badge"

    def handle_endtag(self, tag: str) -> None:
        if tag == "li" and self._path:
            self._path.pop()
        if tag == "span":
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "val":
            self._value = data
        elif self._in == "badge" and self._path:
            self.values.setdefault(self._path[-1], (self._value, data))


def test_a_page_shows_the_manifests_with_what_set_each_value(example_report: Path) -> None:
    html = (example_report / "pairs/projects/vision/vit-finetune.html").read_text(encoding="utf-8")
    assert '<input type="radio" name="tab" id="tab-manifests" class="tab-radio">' in html
    assert "Manifests <small>(2 object(s))</small>" in html
    values = ObjectValues(html[html.index('id="panel-manifests"') :]).values
    worker = "PyTorchJob.spec.pytorchReplicaSpecs.Worker"
    assert values["PyTorchJob.metadata.namespace"] == ('"runai-vision"', "cluster setting")
    assert values["PyTorchJob.metadata.labels.kai.scheduler/queue"] == ('"vision"', "cluster setting")
    assert values["PyTorchJob.metadata.name"] == ('"vit-finetune"', "derived")
    assert values[f"{worker}.replicas"] == ("2", "template")
    assert values[f"{worker}.template.spec.containers[0].image"] == (
        '"nvcr.io/nvidia/pytorch:24.05-py3"',
        "environment",
    )
    assert values[f"{worker}.template.spec.priorityClassName"] == ('"medium"', "system")
    assert values["PyTorchJob.spec.runPolicy.ttlSecondsAfterFinished"] == ("3600", "defaultFrom")
    assert values["PersistentVolumeClaim.metadata.namespace"] == ('"runai-vision"', "cluster setting")
    assert "cluster setting gitSyncImage" in html and "Not in the objects" in html
    assert "relatedUrls: not in the objects" in html


# -- --against a git revision --------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(tmp_path),
    }
    shutil.copytree(EXAMPLE, tmp_path / "templates")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "example org"]):
        subprocess.run(["git", *args], cwd=tmp_path, env=env, check=True, capture_output=True)
    return tmp_path


def test_against_a_revision_marks_changed_pairs_and_shows_their_diff(repo: Path) -> None:
    defaults = repo / "templates/departments/research/defaults.yaml"
    defaults.write_text(defaults.read_text().replace("cc-2100", "cc-9999"), encoding="utf-8")
    diff = run("diff", "--root", "templates", "--against", "HEAD", "-o", "json", cwd=repo)
    assert diff.returncode == 1, diff.stderr
    changed = {pair["pair"] for pair in json.loads(diff.stdout)["pairs"]}
    # research's label reaches its pairs of every kind (jupyter-lab, llm-serve, hpo-sweep)
    assert len(changed) == 13
    assert {"projects/vision/hpo-sweep", "projects/nlp/llm-serve", "departments/research/jupyter-lab"} <= (
        changed
    )
    done = run("report", "--root", "templates", "--out", "site", "--against", "HEAD", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("13 changed against HEAD")
    index = (repo / "site/index.html").read_text(encoding="utf-8")
    rows = Links(index).rows
    assert {pair for pair, css in rows.items() if "changed" in css.split()} == changed
    assert '<th scope="col">Against HEAD</th>' in index
    page = (repo / "site/pairs/projects/vision/vit-finetune.html").read_text(encoding="utf-8")
    assert "Changes against HEAD: changed" in page
    assert "<code>combinedSpec.labels[name=cost-center].value</code>" in page
    assert "&#34;cc-2100&#34;" in page and "&#34;cc-9999&#34;" in page
    unchanged = (repo / "site/pairs/projects/recsys/xgboost-ctr.html").read_text(encoding="utf-8")
    assert "Changes against" not in unchanged


def test_against_an_unknown_revision_fails_and_keeps_the_previous_report(repo: Path) -> None:
    assert run("report", "--root", "templates", "--out", "site", cwd=repo).returncode == 0
    before = sorted(p.relative_to(repo) for p in (repo / "site").rglob("*"))
    done = run("report", "--root", "templates", "--out", "site", "--against", "no-such-rev", cwd=repo)
    assert done.returncode == 2
    assert done.stderr.startswith("error: --against 'no-such-rev' is neither a folder nor a revision")
    assert sorted(p.relative_to(repo) for p in (repo / "site").rglob("*")) == before
    assert sorted(p.name for p in repo.iterdir() if p.name.startswith(".site")) == []


# -- replacing the folder -----------------------------------------------------------------------------------


def test_a_report_replaces_an_earlier_report_whole(tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert run("report", "--root", str(EXAMPLE), "--out", str(out)).returncode == 0
    (out / "stale.html").write_text("old", encoding="utf-8")
    first_inode = out.stat().st_ino
    assert run("report", "--root", str(EXAMPLE), "--out", str(out)).returncode == 0
    assert not (out / "stale.html").exists()
    assert (out / "index.html").is_file()
    assert out.stat().st_ino != first_inode  # a new folder, renamed into place
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # no staging or previous folder is left


def test_an_empty_folder_is_filled(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    assert run("report", "--root", str(EXAMPLE), "--out", str(out)).returncode == 0
    assert (out / "index.html").is_file()


def test_a_folder_that_is_not_a_report_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "docs"
    out.mkdir()
    (out / "keep.md").write_text("mine", encoding="utf-8")
    done = run("report", "--root", str(EXAMPLE), "--out", str(out))
    assert done.returncode == 2
    assert "is not empty and is not a report" in done.stderr
    assert [p.name for p in out.iterdir()] == ["keep.md"]
    assert [p.name for p in tmp_path.iterdir()] == ["docs"]


def test_a_missing_templates_folder_is_an_error(tmp_path: Path) -> None:
    done = run("report", "--root", str(tmp_path / "nope"), "--out", str(tmp_path / "site"))
    assert done.returncode == 2
    assert "does not exist" in done.stderr
    assert not (tmp_path / "site").exists()


def test_a_report_of_the_current_folder_is_titled_by_the_folder_s_name(tmp_path: Path) -> None:
    out = tmp_path / "site"
    done = run("report", "--root", ".", "--out", str(out), cwd=EXAMPLE)
    assert done.returncode == 0, done.stderr
    index = (out / "index.html").read_text()
    assert "Templates report <small>templates</small>" in index
    assert "<small>.</small>" not in index
