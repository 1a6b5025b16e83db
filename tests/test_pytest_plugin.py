"""The pytest plugin in throwaway projects: each test builds a repository with a templates folder and runs
pytest on it.  The plugin is found through its ``pytest11`` entry point, as in any project that installs
template_engine; every throwaway project runs with ``filterwarnings = error``.

The runs are in process (``pytester.runpytest``) for speed, except the ones that show that a fresh
interpreter loads the plugin and leaves it off unless asked (:func:`pytest_in_a_fresh_interpreter`, one
interpreter for all three); see :func:`run` for the one piece of syrupy state an inner run leaves behind.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest
import syrupy
import yaml

pytest_plugins = ["pytester"]

INI = """\
[pytest]
filterwarnings = error
addopts = -p no:cacheprovider
"""

ORG = {
    "templates/org.yaml": """\
        departments:
        - name: research
          projects: [vision, nlp]
        - name: applied
          projects: [recsys]
        """,
    "templates/system/defaults.yaml": """\
        spec:
          imagePullPolicy: IfNotPresent
          environmentVariables:
          - name: HTTP_PROXY
            value: http://proxy:3128
          - name: TZ
            value: UTC
          labels:
          - name: tier
            value: standard
        """,
    "templates/departments/research/defaults.yaml": """\
        spec:
          labels:
          - name: tier
            value: research
        """,
    "templates/assets/environments/python.yaml": """\
        meta:
          name: python
        spec:
          image: python:3.11
        """,
    "templates/system/templates/job.yaml": """\
        meta:
          name: job
        assets:
          environment: python
        spec:
          distributedFramework: PyTorch
          numWorkers: 2
        """,
    "templates/departments/research/templates/sweep.yaml": """\
        meta:
          name: sweep
        assets:
          environment: python
        spec:
          distributedFramework: MPI
          numWorkers: 4
        """,
}

#: Every pair of ORG: three projects see ``job``, the research projects see ``sweep``, plus the two scope
#: templates seen from their own scope.
PAIRS = {
    "projects/vision/job",
    "projects/vision/sweep",
    "projects/nlp/job",
    "projects/nlp/sweep",
    "projects/recsys/job",
    "system/job",
    "departments/research/sweep",
}
RESEARCH = {"projects/vision/job", "projects/vision/sweep", "projects/nlp/job", "projects/nlp/sweep"}
RESEARCH |= {"departments/research/sweep"}
#: With --template-root, one more test checks that every file of the templates folder is valid.
ITEMS = len(PAIRS) + 1


def with_objects(pairs: set[str]) -> set[str]:
    """The snapshot names of ``pairs``: each pair's effective spec and, under ``manifests/``, its objects."""
    return pairs | {f"manifests/{pair}" for pair in pairs}


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A fresh repository holding the templates folder ORG (and no snapshots yet).

    When this suite runs under pytest-xdist, the inner runs must not look like xdist workers: syrupy reads
    ``PYTEST_XDIST_WORKER`` from the environment and, in a worker, leaves the unused-snapshot report (and
    ``--snapshot-update``'s removals) to a controller that an inner run does not have.
    """
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    pytester.makefile(".ini", pytest=INI)
    write(pytester.path, ORG)
    return pytester


def pytest_in_process(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytester.runpytest``, then give syrupy back the outer session.

    syrupy keeps its session in a module global (``syrupy._syrupy``) to record test outcomes; an inner
    session replaces it, and the outer run would record its own outcomes in the inner one.
    """
    outer = syrupy._syrupy
    try:
        return project.runpytest(*args)
    finally:
        syrupy._syrupy = outer


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytest_in_process(project, "--template-root=templates", *args)


def failed_pairs(result: pytest.RunResult) -> set[str]:
    return set(re.findall(r"^FAILED \S+::template_snapshot\[(\S+)\]", result.stdout.str(), re.MULTILINE))


def snapshot_files(root: Path) -> set[str]:
    return {p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.yaml")}


def updated(project: pytest.Pytester) -> pytest.Pytester:
    result = run(project, "--snapshot-update")
    result.assert_outcomes(passed=ITEMS)
    return project


#: Runs ``pytest.main`` once per argument list of ``argv[1]`` (JSON), in order, as that many ``pytest``
#: commands would in the project; the first run is the interpreter's first use of pytest, so the plugin comes
#: from its entry point exactly as in a new ``pytest`` process.  Each run's output sits between markers on
#: stdout and stderr, followed by its exit code and whether ``snapshots/`` exists once it is done.
FRESH_INTERPRETER = """\
import json, pathlib, sys
import pytest

for index, args in enumerate(json.loads(sys.argv[1])):
    for stream in (sys.stdout, sys.stderr):
        print(f"@@run {index}", file=stream, flush=True)
    code = pytest.main([f"--basetemp=basetemp-{index}", *args])
    for stream in (sys.stdout, sys.stderr):
        print(f"@@end {index}", file=stream, flush=True)
    print("@@result " + json.dumps([int(code), pathlib.Path("snapshots").exists()]), flush=True)
"""


def pytest_in_a_fresh_interpreter(
    project: pytest.Pytester, *runs: list[str]
) -> list[tuple[pytest.RunResult, bool]]:
    """Each of ``runs`` (pytest's arguments) in turn in one new interpreter (:data:`FRESH_INTERPRETER`):
    its result, and whether ``snapshots/`` existed right after it."""
    started = time.monotonic()
    process = project.run(sys.executable, "-c", FRESH_INTERPRETER, json.dumps(list(runs)))
    assert process.ret == 0, process.stderr.str()
    out, err = process.stdout.lines, process.stderr.lines

    def between(lines: list[str], index: int) -> list[str]:
        return lines[lines.index(f"@@run {index}") + 1 : lines.index(f"@@end {index}")]

    results = [json.loads(line.removeprefix("@@result ")) for line in out if line.startswith("@@result ")]
    assert len(results) == len(runs), process.stdout.str()
    duration = time.monotonic() - started
    return [
        (pytest.RunResult(code, between(out, index), between(err, index), duration), snapshots)
        for index, (code, snapshots) in enumerate(results)
    ]


def test_the_plugin_is_off_unless_asked_for(project: pytest.Pytester) -> None:
    (result, snapshots_after), (usage, _), (asked, _) = pytest_in_a_fresh_interpreter(
        project, [], ["--help"], ["--template-root=templates", "--snapshot-update"]
    )
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert not snapshots_after
    # ...but installed: a fresh interpreter loads it from the entry point, with its options.
    assert "--template-root=DIR" in usage.stdout.str()
    asked.assert_outcomes(passed=ITEMS)


def test_a_fresh_repository_passes_after_snapshot_update(project: pytest.Pytester) -> None:
    first = run(project)
    first.assert_outcomes(failed=len(PAIRS), passed=1)
    assert failed_pairs(first) == PAIRS
    first.stdout.fnmatch_lines(["projects/vision/job: no snapshot yet (snapshots/projects/vision/job.yaml)"])

    update = run(project, "--snapshot-update")
    update.assert_outcomes(passed=ITEMS)
    update.stdout.fnmatch_lines(["*14 snapshots generated.*"])  # two per pair: the spec and the objects
    assert snapshot_files(project.path / "snapshots") == with_objects(PAIRS)

    again = run(project, "-v")
    again.assert_outcomes(passed=ITEMS)
    again.stdout.fnmatch_lines(["templates/org.yaml::template_snapshot[[]projects/vision/job[]] PASSED*"])
    assert "warning" not in again.stdout.str().lower()


def test_a_snapshot_is_readable_sorted_yaml(project: pytest.Pytester) -> None:
    updated(project)
    text = (project.path / "snapshots/projects/vision/job.yaml").read_text(encoding="utf-8")
    assert text.startswith(
        "# template job (system template) as seen from project vision (department research)\n"
    )
    top = [line.split(":")[0] for line in text.splitlines() if re.match(r"^[a-zA-Z]", line)]
    assert top == ["combinedMasterSpec", "combinedSpec", "masterSpecSameAsWorker", "runnable"]
    assert "  image: python:3.11\n" in text
    assert "  - name: tier\n    value: research\n" in text
    assert "isRunnable: true" in text


def test_a_changed_default_fails_exactly_the_affected_pairs_with_a_readable_diff(
    project: pytest.Pytester,
) -> None:
    updated(project)
    write(
        project.path,
        {
            "templates/departments/research/defaults.yaml": """\
                spec:
                  labels:
                  - name: tier
                    value: research-gpu
                  environmentVariables:
                  - name: HTTP_PROXY
                    exclude: true
                """
        },
    )
    result = run(project)
    result.assert_outcomes(failed=len(RESEARCH), passed=ITEMS - len(RESEARCH))
    assert failed_pairs(result) == RESEARCH
    result.stdout.fnmatch_lines(
        [
            "projects/vision/job: the effective spec differs from its snapshot "
            "snapshots/projects/vision/job.yaml",
            "changed fields:",
            "  combinedSpec.environmentVariables[[]name=HTTP_PROXY[]]: removed (excluded by "
            "departments/research/defaults.yaml:6, department research defaults); "
            "the same in combinedMasterSpec",
            '  combinedSpec.labels[[]name=tier[]].value: "research" -> "research-gpu" (set by '
            "departments/research/defaults.yaml:4, department research defaults); "
            "the same in combinedMasterSpec",
            "snapshot file (- recorded, + now):",
            "-  - name: HTTP_PROXY",
            "*run pytest --snapshot-update and commit the updated snapshot.",
        ]
    )
    assert "Traceback" not in result.stdout.str()

    run(project, "--snapshot-update").assert_outcomes(passed=ITEMS)
    run(project).assert_outcomes(passed=ITEMS)


def test_the_objects_are_snapshotted_beside_the_effective_spec(project: pytest.Pytester) -> None:
    updated(project)
    text = (project.path / "snapshots/manifests/projects/vision/job.yaml").read_text(encoding="utf-8")
    assert text.startswith(
        "# template job (system template) as seen from project vision (department research)\n"
        "# The cluster objects it renders to (template-engine manifests)."
    )
    objects = yaml.safe_load(text)
    assert [obj["kind"] for obj in objects] == ["PyTorchJob"]
    job = objects[0]
    assert job["metadata"]["namespace"] == "runai-vision"
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    assert worker["template"]["spec"]["containers"][0]["image"] == "python:3.11"
    assert worker["template"]["metadata"]["labels"]["tier"] == "research"


def test_a_changed_default_shows_the_changed_objects(project: pytest.Pytester) -> None:
    updated(project)
    write(
        project.path,
        {
            "templates/departments/research/defaults.yaml": """\
                spec:
                  labels:
                  - name: tier
                    value: research-gpu
                """
        },
    )
    result = run(project)
    assert failed_pairs(result) == RESEARCH
    result.stdout.fnmatch_lines(
        [
            "projects/vision/job: the effective spec differs from its snapshot "
            "snapshots/projects/vision/job.yaml",
            "*",
            "projects/vision/job: the cluster objects differ from their snapshot "
            "snapshots/manifests/projects/vision/job.yaml",
            "*",
            "changed objects:",
            '  PyTorchJob.metadata.labels.tier: "research" -> "research-gpu"',
            '  PyTorchJob.spec.pytorchReplicaSpecs.Master.template.metadata.labels.tier: "research" -> '
            '"research-gpu"',
            '  PyTorchJob.spec.pytorchReplicaSpecs.Worker.template.metadata.labels.tier: "research" -> '
            '"research-gpu"',
            "snapshot file (- recorded, + now):",
            "*",
            "+      tier: research-gpu",
        ]
    )
    update = run(project, "--snapshot-update")
    update.assert_outcomes(passed=ITEMS)
    update.stdout.fnmatch_lines([f"*{2 * len(RESEARCH)} snapshots updated.*"])


def test_a_cluster_setting_fails_only_the_objects_snapshots(project: pytest.Pytester) -> None:
    updated(project)
    write(project.path, {"templates/cluster.yaml": "namespacePattern: team-{project}\n"})
    result = run(project)
    projects = {p for p in PAIRS if p.startswith("projects/")}
    assert failed_pairs(result) == projects  # a scope's own pair has no project, so no namespace
    out = result.stdout.str()
    assert "the effective spec differs" not in out
    result.stdout.fnmatch_lines(
        [
            "projects/recsys/job: the cluster objects differ from their snapshot "
            "snapshots/manifests/projects/recsys/job.yaml",
            "*",
            "changed objects:",
            '  PyTorchJob.metadata.namespace: "runai-recsys" -> "team-recsys"',
        ]
    )
    run(project, "--snapshot-update").assert_outcomes(passed=ITEMS)
    text = (project.path / "snapshots/manifests/projects/recsys/job.yaml").read_text(encoding="utf-8")
    assert "namespace: team-recsys" in text
    run(project).assert_outcomes(passed=ITEMS)


def test_a_deleted_objects_snapshot_fails_as_missing(project: pytest.Pytester) -> None:
    updated(project)
    (project.path / "snapshots/manifests/projects/nlp/sweep.yaml").unlink()
    result = run(project)
    assert failed_pairs(result) == {"projects/nlp/sweep"}
    result.stdout.fnmatch_lines(
        [
            "projects/nlp/sweep: no snapshot of its cluster objects yet "
            "(snapshots/manifests/projects/nlp/sweep.yaml)",
        ]
    )
    assert "the effective spec differs" not in result.stdout.str()


def test_a_removed_project_reports_its_snapshots_as_unused_and_update_removes_them(
    project: pytest.Pytester,
) -> None:
    updated(project)
    org = (project.path / "templates/org.yaml").read_text(encoding="utf-8")
    (project.path / "templates/org.yaml").write_text(org.replace("[vision, nlp]", "[nlp]"), encoding="utf-8")

    result = run(project)
    assert result.ret != 0
    result.assert_outcomes(passed=ITEMS - 2)
    result.stdout.fnmatch_lines(["*4 snapshots unused.*"])
    result.stdout.fnmatch_lines(
        [
            *(
                f"no pair any more: snapshots/{name}.yaml (pytest --snapshot-update removes it)"
                for name in ("manifests/projects/vision/job", "manifests/projects/vision/sweep")
            ),
            "no pair any more: snapshots/projects/vision/job.yaml (pytest --snapshot-update removes it)",
            "no pair any more: snapshots/projects/vision/sweep.yaml (pytest --snapshot-update removes it)",
            "4 unused snapshot(s); pytest --snapshot-update removes them.",
        ]
    )

    update = run(project, "--snapshot-update")
    assert update.ret == 0
    update.stdout.fnmatch_lines(["*4 unused snapshots deleted.*"])
    assert snapshot_files(project.path / "snapshots") == with_objects(
        PAIRS - {"projects/vision/job", "projects/vision/sweep"}
    )
    assert not (project.path / "snapshots/projects/vision").exists()
    assert not (project.path / "snapshots/manifests/projects/vision").exists()
    assert run(project).ret == 0


def test_a_new_pair_fails_until_its_snapshot_is_written(project: pytest.Pytester) -> None:
    updated(project)
    write(project.path, {"templates/projects/recsys/templates/ranker.yaml": "meta:\n  name: ranker\n"})
    result = run(project)
    result.assert_outcomes(failed=1, passed=ITEMS)
    assert failed_pairs(result) == {"projects/recsys/ranker"}
    result.stdout.fnmatch_lines(["*Run pytest --snapshot-update to write it*"])


def test_a_pair_that_stops_composing_fails_and_keeps_its_snapshot(project: pytest.Pytester) -> None:
    updated(project)
    job = project.path / "templates/system/templates/job.yaml"
    job.write_text(job.read_text(encoding="utf-8").replace("environment: python", "environment: gone"))
    for args in ((), ("--snapshot-update",)):
        result = run(project, *args)
        assert failed_pairs(result) == {p for p in PAIRS if p.endswith("/job")}
        result.stdout.fnmatch_lines(
            [
                "projects/vision/job: template job (system template) as seen from project vision "
                "* does not compose:"
            ]
        )
        result.stdout.fnmatch_lines(["*unknown environment asset 'gone'*"])
        assert "unused" not in result.stdout.str()
    assert snapshot_files(project.path / "snapshots") == with_objects(PAIRS)


def test_an_invalid_file_fails_instead_of_its_pairs_vanishing(project: pytest.Pytester) -> None:
    updated(project)
    write(project.path, {"templates/departments/research/templates/sweep.yaml": "meta: [\n"})
    result = run(project)
    result.assert_outcomes(failed=1, passed=len(PAIRS) - 3)
    result.stdout.fnmatch_lines(
        [
            "*_ template_files_valid _*",
            "1 invalid file(s) in templates: the pairs they would make are missing from this run*",
            "  departments/research/templates/sweep.yaml:2: invalid YAML:*",
        ]
    )
    kept = "kept: snapshots/{}.yaml (its pair's file departments/research/templates/sweep.yaml is invalid; "
    result.stdout.fnmatch_lines([kept.format("departments/research/sweep") + "*keeps it*"])
    assert "no pair any more" not in result.stdout.str()
    assert "unused" not in result.stdout.str()


def test_the_hint_says_pair_by_pair_what_snapshot_update_keeps_and_removes(project: pytest.Pytester) -> None:
    """A typo in a template (issue 21: ``numWorker``) keeps its pairs' snapshots, even through
    ``--snapshot-update``, while those of a project that is gone are removed, and the hint says which is
    which before the update runs."""
    updated(project)
    sweep = project.path / "templates/departments/research/templates/sweep.yaml"
    sweep.write_text(sweep.read_text(encoding="utf-8").replace("numWorkers", "numWorker"), encoding="utf-8")
    org = project.path / "templates/org.yaml"
    org.write_text(org.read_text(encoding="utf-8").replace("[vision, nlp]", "[vision]"), encoding="utf-8")
    typo = "(its pair's file departments/research/templates/sweep.yaml is invalid; "
    typo += "pytest --snapshot-update keeps it*"
    kept = ["departments/research/sweep", "manifests/departments/research/sweep"]
    kept += ["manifests/projects/vision/sweep", "projects/vision/sweep"]
    gone = [
        "manifests/projects/nlp/job",
        "manifests/projects/nlp/sweep",
        "projects/nlp/job",
        "projects/nlp/sweep",
    ]
    plan = [f"kept: snapshots/{name}.yaml {typo}" for name in kept]
    plan += [
        f"no pair any more: snapshots/{name}.yaml (pytest --snapshot-update removes it)" for name in gone
    ]
    plan += [
        "4 unused snapshot(s); pytest --snapshot-update removes them.",
        "4 snapshot(s) of pairs whose files are invalid; pytest --snapshot-update keeps them.",
    ]
    result = run(project)
    assert result.ret != 0
    result.stdout.fnmatch_lines(plan)
    result.stdout.fnmatch_lines(["*4 snapshots unused.*"])

    update = run(project, "--snapshot-update")
    update.stdout.fnmatch_lines(["*4 unused snapshots deleted.*"])
    assert snapshot_files(project.path / "snapshots") == with_objects(
        PAIRS - {"projects/nlp/job", "projects/nlp/sweep"}
    )
    after = run(project)
    after.stdout.fnmatch_lines(plan[:4])
    assert "no pair any more" not in after.stdout.str()


def test_a_value_runai_refuses_fails_the_files_test_at_its_line(project: pytest.Pytester) -> None:
    """The plugin reports what the API would refuse, as validate does: a Run:ai value rule, at file:line."""
    updated(project)
    write(
        project.path,
        {"templates/departments/research/defaults.yaml": "spec:\n  imagePullSecrets:\n  - {name: Bad_x}\n"},
    )
    result = run(project)
    result.stdout.fnmatch_lines(
        [
            "*_ template_files_valid _*",
            "1 invalid file(s) in templates: *",
            "  departments/research/defaults.yaml:3*imagePullSecrets[[]0[]].name: invalid value 'Bad_x'*",
        ]
    )


def test_an_unreadable_org_is_one_clear_collection_error(project: pytest.Pytester) -> None:
    write(project.path, {"templates/org.yaml": "departments: [\n"})
    result = run(project)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["cannot read the templates folder templates:", "invalid YAML:*"])
    assert "Traceback" not in result.stdout.str()


def test_ini_options_and_another_snapshot_folder(project: pytest.Pytester) -> None:
    project.makefile(".ini", pytest=INI + "template_root = templates\ntemplate_snapshots = reviewed/specs\n")
    project.makepyfile(test_other="def test_other():\n    pass\n")
    assert pytest_in_process(project, "--snapshot-update").ret == 0
    assert snapshot_files(project.path / "reviewed/specs") == with_objects(PAIRS)
    pytest_in_process(project).assert_outcomes(passed=ITEMS + 1)
    # Naming only another test file leaves the org alone (the ini option does not force it in)...
    pytest_in_process(project, "test_other.py").assert_outcomes(passed=1)
    # ...and so does -k, without calling the other snapshots unused.
    result = pytest_in_process(project, "-k", "vision")
    result.assert_outcomes(passed=2, deselected=ITEMS - 1)
    assert "unused" not in result.stdout.str()


def test_a_test_module_can_run_the_same_checks(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_org="""
        from pathlib import Path

        import pytest

        from template_engine.pytest_plugin import OrgSnapshots

        SUITE = OrgSnapshots(Path(__file__).parent / "templates", Path(__file__).parent / "snapshots")

        @pytest.mark.parametrize("pair", SUITE.params())
        def test_org(pair, snapshot):
            SUITE.check(pair, snapshot)
        """
    )
    assert pytest_in_process(project, "--snapshot-update").ret == 0
    assert snapshot_files(project.path / "snapshots") == with_objects(PAIRS)
    result = pytest_in_process(project, "-v")
    result.assert_outcomes(passed=len(PAIRS))
    result.stdout.fnmatch_lines(["test_org.py::test_org[[]projects/nlp/sweep[]] PASSED*"])


# -- rendering variables ------------------------------------------------------------------------------------

#: A project template that needs a variable: without one it cannot compose, so it could never get a snapshot.
NEEDS_USER = {
    "templates/projects/nlp/templates/personal.yaml": """\
        meta:
          name: personal
        assets:
          environment: python
        spec:
          distributedFramework: PyTorch
          numWorkers: 1
          workingDir: '/home/{{ user }}'
        """
}


def test_a_pair_that_needs_a_variable_gets_it_from_the_command_line(project: pytest.Pytester) -> None:
    write(project.path, NEEDS_USER)
    without = run(project, "--snapshot-update")
    assert failed_pairs(without) == {"projects/nlp/personal"}
    without.stdout.fnmatch_lines(["projects/nlp/personal: template personal * does not compose:"])

    run(project, "--snapshot-update", "--template-engine-var", "user=alice").assert_outcomes(passed=ITEMS + 1)
    text = (project.path / "snapshots/projects/nlp/personal.yaml").read_text(encoding="utf-8")
    assert "  workingDir: /home/alice\n" in text
    # the pairs that do not use the variable record no warning about it
    job = (project.path / "snapshots/projects/nlp/job.yaml").read_text(encoding="utf-8")
    assert "--var" not in job and "warnings: []" in job

    run(project, "--template-engine-var=user=alice").assert_outcomes(passed=ITEMS + 1)
    changed = run(project, "--template-engine-var=user=bob")
    assert failed_pairs(changed) == {"projects/nlp/personal"}
    changed.stdout.fnmatch_lines(['  combinedSpec.workingDir: "/home/alice" -> "/home/bob"*'])


def test_variables_from_the_ini_file_and_the_command_line_wins(project: pytest.Pytester) -> None:
    write(project.path, NEEDS_USER)
    project.makefile(".ini", pytest=INI + "template_engine_vars =\n    user = alice\n    team=ml\n")
    run(project, "--snapshot-update").assert_outcomes(passed=ITEMS + 1)
    path = project.path / "snapshots/projects/nlp/personal.yaml"
    assert "  workingDir: /home/alice\n" in path.read_text(encoding="utf-8")
    run(project, "--snapshot-update", "--template-engine-var", "user=carol").assert_outcomes(passed=ITEMS + 1)
    assert "  workingDir: /home/carol\n" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("alice", "'alice' is not NAME=VALUE with NAME a plain identifier"),
        ("project=x", "'project' is reserved"),
    ],
)
def test_a_malformed_variable_is_a_usage_error(project: pytest.Pytester, value: str, message: str) -> None:
    result = run(project, "--template-engine-var", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--template-engine-var: {message}*"])


def test_a_variable_given_twice_is_a_usage_error(project: pytest.Pytester) -> None:
    result = run(project, "--template-engine-var", "user=a", "--template-engine-var", "user=b")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--template-engine-var: 'user' is given more than once*"])
