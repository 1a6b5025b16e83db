"""The layout of a templates folder is strict: every entry is part of it, ignored documentation, or reported.

A misnamed layer file or folder is an error with a did-you-mean hint, and it fails the compositions that would
have used it (a layer never disappears silently); hidden files are warnings; README-like files, git's files
and the top-level ``.template-engine/`` are ignored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from template_engine import Composition, InputError, Org, Problem, load_org

Preview = Callable[..., Composition]
WriteTree = Callable[[Mapping[str, Any]], Path]

DEFAULTS = "spec:\n  workingDir: /from-defaults\n"


def template(name: str) -> str:
    return f"meta:\n  name: {name}\nspec:\n  image: python:3.11\n"


def problems_of(org: Org, rel: str) -> list[Problem]:
    assert rel in org.broken, f"{rel} is not reported; broken: {sorted(org.broken)}"
    return list(org.broken[rel])


def only_problem(org: Org, rel: str) -> Problem:
    (problem,) = problems_of(org, rel)
    assert problem.location is not None and problem.location.file == rel
    return problem


# -- misnamed entries: an error with a hint, and the compositions that needed them fail -------------------


@pytest.mark.parametrize(
    ("rel", "hint"),
    [
        ("projects/vision/default.yaml", "did you mean 'defaults.yaml'?"),
        ("projects/vision/Defaults.yaml", "did you mean 'defaults.yaml'?"),
        ("projects/vision/defaults.json", "did you mean 'defaults.yaml'?"),
    ],
)
def test_a_misnamed_defaults_file_is_an_error_and_fails_its_layer(
    write_tree: WriteTree, preview: Preview, rel: str, hint: str
) -> None:
    root = write_tree({rel: DEFAULTS})
    problem = only_problem(load_org(root), rel)
    assert problem.message.startswith("unexpected file")
    assert hint in problem.message
    # the project's compositions fail with that problem instead of silently missing the layer
    with pytest.raises(InputError) as caught:
        preview(root, "job", "vision")
    assert hint in caught.value.render()
    # other projects are not concerned
    root_other = write_tree({rel: DEFAULTS, "projects/nlp/templates/other.yaml": template("other")})
    assert preview(root_other, "other", "nlp").combined_spec["image"] == "python:3.11"


def test_defaults_yml_is_read(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree({"projects/vision/defaults.yml": DEFAULTS, "system/templates/ddp.yml": template("ddp")})
    org = load_org(root)
    assert org.broken == {} and org.warnings == ()
    assert preview(root, "job", "vision").combined_spec["workingDir"] == "/from-defaults"
    assert preview(root, "ddp", "vision").combined_spec["image"] == "python:3.11"


@pytest.mark.parametrize(
    ("first", "second", "what"),
    [
        ("system/templates/ddp.yaml", "system/templates/ddp.yml", "template 'ddp'"),
        ("assets/computes/gpu.yaml", "assets/computes/gpu.yml", "compute asset 'gpu'"),
        ("projects/vision/defaults.yaml", "projects/vision/defaults.yml", "the defaults file"),
    ],
)
def test_both_spellings_of_one_name_are_an_error(
    write_tree: WriteTree, first: str, second: str, what: str
) -> None:
    body = DEFAULTS if "defaults" in first else template(Path(first).stem)
    if "computes" in first:
        body = "meta:\n  name: gpu\nspec:\n  compute:\n    gpuDevicesRequest: 1\n"
    org = load_org(write_tree({first: body, second: body}))
    problem = only_problem(org, second)
    assert problem.message == f"{what} is written twice: {Path(first).name} and {Path(second).name}"
    assert [r.file for r in problem.related] == [first]
    assert first not in org.broken


def test_a_duplicated_template_fails_to_compose(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree(
        {"system/templates/ddp.yaml": template("ddp"), "system/templates/ddp.yml": template("ddp")}
    )
    with pytest.raises(InputError, match="written twice"):
        preview(root, "ddp", "vision")


def test_a_misnamed_templates_folder(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree({"departments/research/template/sweep.yaml": template("sweep")})
    org = load_org(root)
    problem = only_problem(org, "departments/research/template")
    assert problem.message == (
        "unexpected folder 'template' in departments/research/ (did you mean 'templates'?)"
    )
    with pytest.raises(InputError, match="did you mean 'templates'"):
        preview(root, "sweep", "vision")


def test_a_misnamed_asset_folder(write_tree: WriteTree, preview: Preview) -> None:
    job = "meta:\n  name: job\nassets:\n  environment: py\nspec:\n  numWorkers: 1\n"
    root = write_tree(
        {
            "assets/environment/py.yaml": "meta:\n  name: py\nspec:\n  image: python:3.11\n",
            "projects/vision/templates/job.yaml": job,
        }
    )
    problem = only_problem(load_org(root), "assets/environment")
    assert "did you mean 'environments'?" in problem.message
    with pytest.raises(InputError, match="did you mean 'environments'"):
        preview(root, "job", "vision")


@pytest.mark.parametrize(
    ("rel", "message"),
    [
        ("department/research/defaults.yaml", "unexpected folder 'department' in the templates folder"),
        ("notes.txt", "unexpected file 'notes.txt' in the templates folder"),
        ("system.yaml", "unexpected file 'system.yaml' in the templates folder"),
        ("projects/vision/job.yaml", "unexpected file 'job.yaml' in projects/vision/"),
        ("projects/vision/templates/nested/job.yaml", "unexpected folder 'nested'"),
        ("projects/vision/templates/job.json", "only YAML files are read here"),
        ("projects/vision/templates/other.YAML", "did you mean 'other.yaml'?"),
        ("assets/pytorch.yaml", "unexpected file 'pytorch.yaml' in assets/"),
        ("departments/research.yaml", "unexpected file 'research.yaml' in departments/"),
    ],
)
def test_an_entry_outside_the_layout_is_an_error(write_tree: WriteTree, rel: str, message: str) -> None:
    root = write_tree({rel: DEFAULTS})
    org = load_org(root)
    reported = [p for problems in org.broken.values() for p in problems]
    assert any(message in p.message for p in reported), [p.message for p in reported]


def test_an_unknown_scope_folder_has_a_hint(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree(
        {"projects/vision/templates/job.yaml": None, "projects/visoin/templates/job.yaml": template("job")}
    )
    problem = only_problem(load_org(root), "projects/visoin")
    assert problem.message == "unknown project 'visoin': it is not in org.yaml (did you mean 'vision'?)"
    with pytest.raises(InputError, match="did you mean 'vision'"):
        preview(root, "job", "vision")


def test_org_yml_is_named_in_the_error(tmp_path: Path) -> None:
    (tmp_path / "org.yml").write_text("departments: []\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_org(tmp_path)
    assert "no org.yaml" in caught.value.render() and "org.yml" in caught.value.render()


# -- links, special files, unreadable folders -------------------------------------------------------------


def test_a_dangling_symlink_is_an_error(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree({})
    (root / "system" / "templates").mkdir(parents=True)
    (root / "system" / "templates" / "gone.yaml").symlink_to(root / "nowhere.yaml")
    (root / "projects" / "vision" / "defaults.yaml").symlink_to(root / "nowhere.yaml")
    org = load_org(root)
    for rel in ("system/templates/gone.yaml", "projects/vision/defaults.yaml"):
        assert "broken symbolic link" in only_problem(org, rel).message
    with pytest.raises(InputError, match="broken symbolic link"):
        preview(root, "job", "vision")


def test_a_symlink_to_a_file_inside_the_folder_is_followed(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree({"departments/research/defaults.yaml": DEFAULTS})
    (root / "projects" / "vision" / "defaults.yaml").symlink_to(
        Path("../../departments/research/defaults.yaml")
    )
    assert load_org(root).broken == {}
    assert preview(root, "job", "vision").combined_spec["workingDir"] == "/from-defaults"


OUTSIDE = (
    "a file or folder inside the templates folder (a symbolic link is followed only to a path inside it)"
)


def test_a_symlink_leading_outside_the_folder_is_a_problem_and_is_not_read(
    write_tree: WriteTree, preview: Preview
) -> None:
    """A file or folder whose link leads out of the templates folder is refused, naming the entry, where it
    leads and what was expected; the compositions that needed it fail with that problem."""
    root = write_tree({})
    elsewhere = root.parent / "elsewhere"
    (elsewhere / "templates").mkdir(parents=True)
    (elsewhere / "defaults.yaml").write_text(DEFAULTS, encoding="utf-8")
    (elsewhere / "templates" / "stolen.yaml").write_text(template("stolen"), encoding="utf-8")
    (root / "projects" / "vision" / "defaults.yaml").symlink_to(elsewhere / "defaults.yaml")
    (root / "system").mkdir()
    (root / "system" / "templates").symlink_to(elsewhere / "templates")
    org = load_org(root)
    defaults = only_problem(org, "projects/vision/defaults.yaml")
    assert defaults.message == (
        "cannot read file: a symbolic link leads outside the templates folder, "
        f"to {(elsewhere / 'defaults.yaml').resolve()}"
    )
    assert defaults.expected == OUTSIDE
    listing = only_problem(org, "system/templates")
    assert listing.message.startswith(
        "cannot list the folder system/templates/: a symbolic link leads outside"
    )
    assert listing.expected == OUTSIDE
    assert not any("stolen" in by_name for by_name in org.templates.values())
    with pytest.raises(InputError, match="leads outside the templates folder"):
        preview(root, "job", "vision")


@pytest.mark.parametrize("name", ["org.yaml", "cluster.yaml"])
def test_an_org_or_cluster_file_leading_outside_the_folder_stops_the_load(
    write_tree: WriteTree, name: str
) -> None:
    root = write_tree({"cluster.yaml": "queues: {}\n"})
    moved = root.parent / f"moved-{name}"
    (root / name).rename(moved)
    (root / name).symlink_to(moved)
    with pytest.raises(InputError) as caught:
        load_org(root)
    (problem,) = caught.value.problems
    assert problem.location is not None and problem.location.file == name
    assert "leads outside the templates folder" in problem.message and problem.expected == OUTSIDE


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], None]]:
    """Make folders unreadable the way the OS does (tests may run as root, where chmod 000 blocks nothing):
    listing them raises PermissionError."""
    blocked: set[str] = set()
    scandir = os.scandir

    def guarded(path: Any = ".") -> Any:
        if os.fspath(path) in blocked:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", guarded)
    yield lambda folder: blocked.add(os.fspath(folder))


def test_an_unreadable_folder_is_a_reported_problem(
    write_tree: WriteTree, preview: Preview, unreadable: Callable[[Path], None]
) -> None:
    root = write_tree(
        {"projects/vision/defaults.yaml": DEFAULTS, "system/templates/ddp.yaml": template("ddp")}
    )
    unreadable(root / "projects" / "vision")
    org = load_org(root)
    problem = only_problem(org, "projects/vision")
    assert problem.message == "cannot list the folder projects/vision/: Permission denied"
    # the project's layer cannot be read: its compositions fail instead of going without it
    with pytest.raises(InputError, match="cannot list the folder projects/vision/"):
        preview(root, "ddp", "vision")
    assert preview(root, "ddp", "nlp").combined_spec["image"] == "python:3.11"


def test_an_unreadable_root_is_an_input_error(
    write_tree: WriteTree, unreadable: Callable[[Path], None]
) -> None:
    root = write_tree({})
    unreadable(root)
    with pytest.raises(InputError, match="cannot list the folder"):
        load_org(root)


# -- what is ignored ----------------------------------------------------------------------------------------


def test_documentation_and_git_files_are_ignored(write_tree: WriteTree) -> None:
    root = write_tree(
        {
            "README.md": "# org\n",
            "LICENSE": "text\n",
            ".gitignore": "*.swp\n",
            ".git/HEAD": "ref: refs/heads/main\n",
            "projects/vision/README.md": "# vision\n",
            "projects/vision/templates/NOTES.md": "notes\n",
            "assets/environments/readme.txt": "text\n",
            "system/templates/.gitkeep": "",
            ".template-engine/export.yaml": "exported: 2024-01-01\n",
        }
    )
    org = load_org(root)
    assert org.broken == {}
    assert org.warnings == ()


def test_other_hidden_entries_are_warnings(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree(
        {
            ".DS_Store": "x",
            "projects/vision/templates/.job.yaml.swp": "x",
            "projects/vision/.template-engine/x.yaml": "x",  # only the top-level one is the tools' folder
        }
    )
    org = load_org(root)
    assert org.broken == {}
    assert sorted(w.location.file for w in org.warnings if w.location) == [
        ".DS_Store",
        "projects/vision/.template-engine",
        "projects/vision/templates/.job.yaml.swp",
    ]
    assert all(w.message.startswith("hidden ") and "is ignored" in w.message for w in org.warnings)
    assert preview(root, "job", "vision").combined_spec["image"] == "python:3.11"


def test_the_example_org_follows_the_layout(example_root: Path) -> None:
    org = load_org(example_root)
    assert org.broken == {} and org.warnings == ()
