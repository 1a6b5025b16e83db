"""Sandboxed Jinja2 rendering of combined specs (DESIGN.md "Rendering")."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from pathlib import Path as FsPath
from typing import Any

import pytest
from jinja2 import UndefinedError
from jinja2.exceptions import SecurityError

from template_engine import Composition, CompositionError, Location, RenderError
from template_engine.merge.plan import SPEC_PLAN
from template_engine.paths import Match, Path
from template_engine.render import RESERVED, is_expression, render_spec, render_string

Preview = Callable[..., Composition]
WriteTree = Callable[[Mapping[str, Any]], FsPath]

CONTEXT = {"project": {"name": "vision"}, "department": {"name": "research"}, "user": "alice"}


def render(spec: dict[str, Any], context: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[Any]]:
    seen: list[Path] = []

    def locate(path: Path) -> Location:
        seen.append(path)
        return Location("f.yaml", 3, 5, "layer x")

    out, problems = render_spec(
        spec, CONTEXT if context is None else context, locate, "combinedSpec", SPEC_PLAN
    )
    return out, problems


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{ x }}", True),
        ("a {% if x %}b{% endif %}", True),
        ("plain", False),
        ("{ x }", False),
        ("}}{{", True),
    ],
)
def test_is_expression(text: str, expected: bool) -> None:
    assert is_expression(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/home/{{ user }}", "/home/alice"),
        ("{{ department.name }}-{{ project.name }}", "research-vision"),
        ("{{ missing | default('bot') }}", "bot"),
        ("{% if user == 'alice' %}yes{% else %}no{% endif %}", "yes"),
        ("{{ user | upper }}", "ALICE"),
        ("{{ 1 + 1 }}", "2"),
    ],
)
def test_render_string(text: str, expected: str) -> None:
    assert render_string(text, CONTEXT) == expected


@pytest.mark.parametrize(
    "text", ["{{ missing }}", "x{{ missing }}", "{{ project.missing }}", "{{ template.name }}"]
)
def test_unknown_names_raise(text: str) -> None:
    with pytest.raises(UndefinedError):
        render_string(text, CONTEXT)


@pytest.mark.parametrize(
    "text",
    [
        "{{ ''.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ '{0.__class__}'.format('') }}",
        "{{ user.__class__ }}",
    ],
)
def test_the_sandbox_refuses_unsafe_access(text: str) -> None:
    with pytest.raises(SecurityError):
        render_string(text, CONTEXT)


def test_render_spec_renders_every_string_and_leaves_the_rest() -> None:
    spec = {
        "workingDir": "/home/{{ user }}",
        "command": "echo ${HOME} { not }",
        "numWorkers": 2,
        "stdin": True,
        "labels": [{"name": "team", "value": "{{ project.name }}"}],
        "compute": {"cpuCoreRequest": 0.5, "cpuMemoryRequest": "1Gi"},
        "nodePools": ["{{ department.name }}-pool", "shared"],
    }
    before = copy.deepcopy(spec)
    out, problems = render(spec)
    assert problems == []
    assert out == {
        "workingDir": "/home/alice",
        "command": "echo ${HOME} { not }",
        "numWorkers": 2,
        "stdin": True,
        "labels": [{"name": "team", "value": "vision"}],
        "compute": {"cpuCoreRequest": 0.5, "cpuMemoryRequest": "1Gi"},
        "nodePools": ["research-pool", "shared"],
    }
    assert spec == before


def test_render_spec_reports_every_failure_with_its_path() -> None:
    spec = {
        "workingDir": "/home/{{ usr }}",
        "environmentVariables": [{"name": "A", "value": "{{ nope }}"}, {"name": "B", "value": "ok"}],
        "ports": [{"container": 8080, "toolName": "{{ ''.__class__ }}"}],
        "args": "{{ unclosed",
    }
    out, problems = render(spec)
    paths = [p.path for p in problems]
    assert paths == [
        ("workingDir",),
        ("environmentVariables", Match("name", "A"), "value"),
        ("ports", Match("container", 8080), "toolName"),
        ("args",),
    ]
    assert all(p.location == Location("f.yaml", 3, 5, "layer x") for p in problems)
    assert "'usr' is undefined" in problems[0].message
    assert "refused by the sandbox" in problems[2].message and "'__class__'" in problems[2].message
    assert problems[0].message.startswith("combinedSpec")
    assert out["workingDir"] == "/home/{{ usr }}"  # left as written, never half-rendered


@pytest.mark.parametrize(
    ("text", "context", "expected"),
    [
        ("/home/{{ project.name | default('shared') }}", {"department": {"name": "r"}}, "/home/shared"),
        ("/home/{{ project.name | default('shared') }}", {"project": {"name": "v"}}, "/home/v"),
        ("{{ project.name.upper | d('x') }}", {}, "x"),
        ("{{ project['name'] | default('x') }}", {}, "x"),
        ("{% if project.name is defined %}{{ project.name }}{% else %}none{% endif %}", {}, "none"),
        ("{{ project.name is undefined }}", {}, "True"),
    ],
)
def test_an_attribute_of_an_undefined_name_is_undefined(
    text: str, context: dict[str, Any], expected: str
) -> None:
    """Issue 31: ``{{ project.name | default('shared') }}`` at a department's own view renders the default
    (an attribute of a missing name is missing, as with Jinja2's ChainableUndefined)."""
    assert render_string(text, context) == expected


@pytest.mark.parametrize(
    "text",
    [
        "/home/{{ project.name }}",
        "{{ project.name ~ '-x' }}",
        "{{ project.name | upper }}",
        "{% if project.name %}a{% endif %}",
        "{{ project.name == 'v' }}",
        "{{ project.name.upper() }}",
    ],
)
def test_an_undefined_value_that_is_used_is_still_an_error(text: str) -> None:
    with pytest.raises(UndefinedError, match="'project' is undefined"):
        render_string(text, {"department": {"name": "research"}})


@pytest.mark.parametrize(
    ("context", "view"),
    [
        ({"department": {"name": "research"}, "template": {"name": "t"}}, "a department's own view"),
        ({"template": {"name": "t"}}, "the system's own view"),
    ],
)
def test_a_scope_name_the_view_lacks_says_how_to_guard_it(context: dict[str, Any], view: str) -> None:
    _, (problem,) = render({"workingDir": "/home/{{ project.name }}"}, context)
    assert problem.message == (
        "combinedSpec cannot render '/home/{{ project.name }}': project is not defined at "
        f"{view}; guard with `{{% if project is defined %}}` or `| default(...)`"
    )
    assert "project is defined" in str(problem.expected)
    # a name of the user's own is still answered with the names there are
    _, (other,) = render({"workingDir": "{{ usr.name }}"}, context)
    assert "'usr' is undefined" in other.message


def test_an_unknown_name_offers_the_closest_known_one() -> None:
    """Issue 31: ``{{ usr.name }}`` where the variable is ``user`` (did-you-mean, as for a schema's field)."""
    _, (problem,) = render(
        {"workingDir": "/home/{{ usr.name }}"}, {"user": "alice", "project": {"name": "v"}}
    )
    assert problem.message == (
        "combinedSpec cannot render '/home/{{ usr.name }}': 'usr' is undefined (did you mean 'user'?)"
    )
    assert problem.expected == "names: project, user"
    _, (far,) = render({"workingDir": "{{ zzz }}"}, {"user": "alice"})
    assert far.message.endswith("'zzz' is undefined")


def test_reserved_names() -> None:
    # The composition's own names (a variable would hide them); the language has no globals.
    assert {"cluster", "department", "project", "template"} == RESERVED


@pytest.mark.parametrize(
    "text",
    ["{{ 1 / 0 }}", "{{ range(10 ** 6) | list | length }}", "{{ 1 + 'a' }}"],
    ids=["zero-division", "no-calls-but-string-methods", "type-error"],
)
def test_a_runtime_error_in_an_expression_is_a_render_problem(text: str) -> None:
    # DESIGN.md "Errors": bad input never produces a traceback; any failure of an expression is reported with
    # its field path, like an unknown name.
    out, problems = render({"workingDir": text})
    assert [p.path for p in problems] == [("workingDir",)]
    assert out["workingDir"] == text


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("{{ 'a' + 1 }}", "(+ cannot combine a str and an int)"),
        ("{{ 1 + 'a' }}", "(+ cannot combine an int and a str)"),
        ("{{ 'a' - 'b' }}", "(- cannot combine a str and a str)"),
        ("{{ 'a,b'.split(',') + 'c' }}", "(+ cannot combine a list and a str)"),
        ("{{ 2 * true }}", "(* cannot combine an int and a bool)"),
        ("{{ 1.5 / none }}", "(/ cannot combine a float and None)"),
    ],
)
def test_an_operator_refused_names_both_operand_types(text: str, detail: str) -> None:
    """Text plus text works: the message says the two types cannot be combined, not that ``+`` needs a
    number (docs/decisions.md, 'Expressions')."""
    _, (problem,) = render({"workingDir": text})
    assert detail in problem.message, problem.message
    assert "needs a number" not in problem.message


def test_text_plus_text_and_numbers_still_combine() -> None:
    out, problems = render({"workingDir": "{{ 'a' + 'b' }}-{{ 1 + 2.5 }}"})
    assert problems == [] and out["workingDir"] == "ab-3.5"


# -- through compose -----------------------------------------------------------------------------------------


def test_names_come_from_the_view(write_tree: WriteTree, preview: Preview) -> None:
    body = """\
        meta:
          name: job
        spec:
          image: '{{ department.name }}/{{ project.name }}/{{ template.name }}:{{ tag }}'
          distributedFramework: PyTorch
        """
    root = write_tree({"projects/vision/templates/job.yaml": body})
    composition = preview(root, "job", "vision", variables={"tag": "v1"})
    assert composition.combined_spec["image"] == "research/vision/job:v1"
    assert composition.combined_master_spec == {"image": "research/vision/job:v1"}
    assert composition.to_response()["spec"]["image"].startswith("{{ department.name }}")


def test_a_render_error_names_the_layer_that_wrote_the_string(
    write_tree: WriteTree, preview: Preview
) -> None:
    root = write_tree({"departments/research/defaults.yaml": "spec:\n  workingDir: /home/{{ usr }}\n"})
    with pytest.raises(RenderError) as caught:
        preview(root, "job", "vision")
    (problem,) = caught.value.problems
    assert problem.path == ("workingDir",)
    assert problem.location is not None
    assert problem.location.file == "departments/research/defaults.yaml"
    assert problem.location.line == 2
    assert problem.location.layer == "department research defaults"


def test_the_string_that_wins_is_the_one_rendered(write_tree: WriteTree, preview: Preview) -> None:
    # A broken expression overridden by a higher layer is never rendered.
    root = write_tree(
        {
            "system/defaults.yaml": "spec:\n  workingDir: /home/{{ usr }}\n",
            "projects/vision/defaults.yaml": "spec:\n  workingDir: /home/{{ user }}\n",
        }
    )
    assert (
        preview(root, "job", "vision", variables={"user": "bob"}).combined_spec["workingDir"] == "/home/bob"
    )


def test_a_department_view_has_no_project(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree(
        {
            "system/defaults.yaml": "spec:\n  workingDir: /home/{{ project.name }}\n",
            "departments/research/templates/dept.yaml": "meta:\n  name: dept\nspec:\n  image: x\n",
        }
    )
    with pytest.raises(RenderError, match="project"):
        preview(root, "dept", department="research")


@pytest.mark.parametrize("name", ["project", "department", "template"])
def test_a_variable_may_not_shadow_a_scope_name(write_tree: WriteTree, preview: Preview, name: str) -> None:
    with pytest.raises(CompositionError, match=f"'{name}'"):
        preview(write_tree({}), "job", "vision", variables={name: "x"})


def test_a_worker_render_error_is_reported_once(write_tree: WriteTree, preview: Preview) -> None:
    # With the master the same as the worker, the master's copy of the string is not reported again.
    root = write_tree({"system/defaults.yaml": "spec:\n  workingDir: /home/{{ usr }}\n"})
    with pytest.raises(RenderError) as caught:
        preview(root, "job", "vision")
    assert len(caught.value.problems) == 1


def test_a_separate_master_render_error_names_the_master(write_tree: WriteTree, preview: Preview) -> None:
    body = """\
        meta:
          name: job
        masterSpecSameAsWorker: false
        spec:
          image: x
          distributedFramework: TF
        master:
          spec:
            image: '{{ master_image }}'
        """
    root = write_tree({"projects/vision/templates/job.yaml": body})
    with pytest.raises(RenderError) as caught:
        preview(root, "job", "vision")
    (problem,) = caught.value.problems
    assert problem.message.startswith("combinedMasterSpec")
    assert problem.location is not None and problem.location.line == 9


ARGUMENTS = "calls a filter or method with arguments it does not take"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("{{ 'x' | int(1, 2, 3) }}", ARGUMENTS),  # too many
        ("{{ 'abc'.strip('a', 'b') }}", ARGUMENTS),  # a string method, by its builtin's parameters
        ("{{ 'abc'.startswith() }}", ARGUMENTS),  # a builtin without a signature of its own
        ("{{ 3 is divisibleby }}", ARGUMENTS),  # a test missing its argument
        ("{{ 1.5 | round(y=1) }}", ARGUMENTS),  # a keyword the filter does not have
        ("{{ 'abc'.find('a', 'x') }}", "applies an operation to a value of a type it does not take"),
        ("{{ 'a' | abs }}", "applies an operation to a value of a type it does not take"),
    ],
)
def test_a_call_is_refused_for_its_arguments_by_the_parameters_not_the_message(text: str, kind: str) -> None:
    _, problems = render({"workingDir": text})
    assert [p.path for p in problems] == [("workingDir",)] and kind in problems[0].message


def test_a_filter_takes_its_arguments_by_their_names() -> None:
    assert render_string("{{ 'ff' | int(base=16) }}", {}) == "255"
    assert render_string("{{ 'x' | float(default=1.5) }}", {}) == "1.5"
    assert render_string("{{ 2.567 | round(precision=1) }}", {}) == "2.6"
    assert render_string("{{ unset | default(default='d') }}", {}) == "d"
