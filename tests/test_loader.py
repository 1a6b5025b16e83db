"""The loader: hardened YAML with line numbers, schema validation with every problem at once, org.yaml checks,
and the promise that composing never changes what was loaded."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from template_engine import Composition, InputError, Location, Org, Problem, compose, load_org
from template_engine.loader import yaml_safe
from template_engine.loader.yaml_safe import MAX_INT_DIGITS, MAX_NODES, load_yaml

Preview = Callable[..., Composition]
WriteTree = Callable[[Mapping[str, Any]], Path]


def problems_of(org: Org, rel: str) -> list[Problem]:
    assert rel in org.broken, f"{rel} is not broken; broken: {sorted(org.broken)}"
    return list(org.broken[rel])


def rendered(problems: list[Problem]) -> str:
    return "\n".join(p.render() for p in problems)


def line_of(problem: Problem) -> int | None:
    assert problem.location is not None
    return problem.location.line


BILLION_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)


# -- safe YAML -----------------------------------------------------------------------------------------------


def test_yaml_keeps_the_line_and_column_of_every_value() -> None:
    loaded = load_yaml("spec:\n  image: x\n  labels:\n  - name: a\n", "f.yaml")
    assert loaded.data == {"spec": {"image": "x", "labels": [{"name": "a"}]}}
    # a field is where its key is written; a list item where its mapping starts
    assert loaded.lines[("spec", "image")] == (2, 3)
    assert loaded.lines[("spec", "labels")] == (3, 3)
    assert loaded.lines[("spec", "labels", 0)] == (4, 5)
    assert loaded.lines[("spec", "labels", 0, "name")] == (4, 5)


def test_an_empty_document_is_none() -> None:
    assert load_yaml("", "f.yaml").data is None
    assert load_yaml("# only a comment\n", "f.yaml").data is None


def test_broken_yaml_names_file_and_line() -> None:
    with pytest.raises(InputError) as caught:
        load_yaml("spec:\n  image: x\n  labels: [a, b\n", "system/defaults.yaml")
    (problem,) = caught.value.problems
    assert problem.message.startswith("invalid YAML")
    assert problem.location is not None
    assert problem.location.file == "system/defaults.yaml"
    assert problem.location.line is not None and problem.location.line >= 3


def test_duplicate_mapping_keys_name_both_lines() -> None:
    with pytest.raises(InputError) as caught:
        load_yaml("spec:\n  image: a\n  workingDir: /w\n  image: b\n", "f.yaml")
    (problem,) = caught.value.problems
    assert "duplicate key 'image'" in problem.message
    assert "line 2" in problem.message
    assert line_of(problem) == 4
    assert problem.path == ("spec", "image")


def test_an_alias_bomb_is_refused_after_a_bounded_amount_of_work(monkeypatch: pytest.MonkeyPatch) -> None:
    # Count the values built instead of timing the refusal: the document expands to 9**9 values, the reader
    # stops right after MAX_NODES of them.
    built = 0
    build = yaml_safe._Builder.build

    def counting(self: Any, node: Any, path: Any) -> Any:
        nonlocal built
        built += 1
        return build(self, node, path)

    monkeypatch.setattr(yaml_safe._Builder, "build", counting)
    with pytest.raises(InputError) as caught:
        load_yaml(BILLION_LAUGHS, "bomb.yaml")
    assert built == MAX_NODES + 1
    assert f"more than {MAX_NODES}" in caught.value.problems[0].message
    assert caught.value.problems[0].location is not None


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(InputError) as caught:
        load_yaml("spec: &a\n  nested: *a\n", "f.yaml")
    (problem,) = caught.value.problems
    assert "recursive alias" in problem.message
    assert problem.location is not None and problem.location.file == "f.yaml"
    assert problem.location.line in (1, 2)


@pytest.mark.parametrize(
    "text",
    [
        "spec: !!python/object/apply:os.system ['touch {marker}']\n",
        "spec: !!python/name:os.system\n",
        "spec: !!python/object/new:os.system ['touch {marker}']\n",
        "spec: !custom {{image: x}}\n",
        "spec: !!set {{a, b}}\n",
    ],
)
def test_object_construction_tags_are_refused(tmp_path: Path, text: str) -> None:
    marker = tmp_path / "marker"
    with pytest.raises(InputError) as caught:
        load_yaml(text.format(marker=marker), "f.yaml")
    assert "unsupported YAML tag" in caught.value.problems[0].message
    assert not marker.exists()


def test_merge_keys_and_multiple_documents_are_refused() -> None:
    with pytest.raises(InputError, match="merge keys"):
        load_yaml("base: &b {image: x}\nspec:\n  <<: *b\n", "f.yaml")
    with pytest.raises(InputError, match="single document"):
        load_yaml("spec: {}\n---\nspec: {}\n", "f.yaml")


def test_dates_stay_text() -> None:
    assert load_yaml("value: 2024-01-01\n", "f.yaml").data == {"value": "2024-01-01"}


TOO_LARGE = "the number {} is too large (it would be infinite)"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        *(
            (v, "{} is not a finite number")
            for v in (".inf", "-.inf", "+.inf", ".Inf", "-.INF", ".nan", ".NaN")
        ),
        (".NAN", "{} is not a finite number"),
        # a YAML 1.1 float (a dot and a signed exponent) beyond range
        ("1.0e+400", TOO_LARGE),
        (".5e+400", TOO_LARGE),
        # YAML 1.1 reads these as text (no dot, or an unsigned exponent): pydantic said "not a valid number"
        ("1e400", TOO_LARGE),
        ("-1e999", TOO_LARGE),
        ("1E+400", TOO_LARGE),
        ("1.0e400", TOO_LARGE),
        ("+1e" + "9" * 5000, TOO_LARGE),
    ],
)
def test_non_finite_numbers_are_refused(value: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        load_yaml(f"spec:\n  compute:\n    cpuCoreRequest: {value}\n", "system/defaults.yaml")
    (problem,) = caught.value.problems
    shown = value if len(value) <= 20 else value[:17] + "..."
    assert problem.message == message.format(shown)
    assert problem.path == ("spec", "compute", "cpuCoreRequest")
    assert problem.location is not None
    assert (problem.location.file, problem.location.line) == ("system/defaults.yaml", 3)
    assert problem.expected is not None and problem.expected.startswith("a finite number")


def test_a_quoted_inf_is_text() -> None:
    assert load_yaml("value: '.inf'\n", "f.yaml").data == {"value": ".inf"}


@pytest.mark.parametrize("text", ["'1e400'", '"1e400"', "1e300", "1e-400", "1e3", "1Gi", "x1e400", "1e400x"])
def test_numbers_in_range_and_quoted_or_other_text_stay_as_yaml_reads_them(text: str) -> None:
    assert load_yaml(f"value: {text}\n", "f.yaml").data == {"value": text.strip("'\"")}


def test_every_non_finite_number_of_a_file_is_reported() -> None:
    text = "a: 1.0e+400\nb: .nan\nc: [1e400, -.inf]\nd: 1.5\n"
    with pytest.raises(InputError) as caught:
        load_yaml(text, "f.yaml")
    problems = caught.value.problems
    assert [(p.path, line_of(p)) for p in problems] == [
        (("a",), 1),
        (("b",), 2),
        (("c", 0), 3),
        (("c", 1), 3),
    ]
    assert [p.message for p in problems] == [
        TOO_LARGE.format("1.0e+400"),
        ".nan is not a finite number",
        TOO_LARGE.format("1e400"),
        "-.inf is not a finite number",
    ]


def test_problems_noted_before_a_fatal_one_are_kept() -> None:
    with pytest.raises(InputError) as caught:
        load_yaml('a: .nan\nb: "x\\0"\nc: !!set {x}\n', "f.yaml")
    messages = [p.message for p in caught.value.problems]
    assert messages[:2] == [".nan is not a finite number", "the text holds a NUL character (\\u0000)"]
    assert "unsupported YAML tag" in messages[2]


# -- text no database stores: NUL characters and lone surrogates ------------------------------------------

NUL = "the text holds a NUL character (\\u0000)"


def surrogate(escape: str) -> str:
    return f"the text holds a lone surrogate ({escape}), which is not Unicode text"


@pytest.fixture(params=["libyaml", "python"])
def yaml_parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both parsers: libyaml refuses a surrogate escape (naming no field), the pure-Python one reads it."""
    if request.param == "python":
        monkeypatch.setattr(yaml_safe, "_Loader", yaml.SafeLoader)
    else:
        assert yaml_safe._Loader is getattr(yaml, "CSafeLoader", None), "libyaml is not installed"
    return str(request.param)


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ('"a\\0b"', NUL),
        ('"a\\x00b"', NUL),
        ('"\\u0000"', NUL),
        ('"\\udfff"', surrogate("\\udfff")),
        ('"x\\ud800y"', surrogate("\\ud800")),
        ('"\\U0000dc80"', surrogate("\\udc80")),
        ('"\\ud83d\\ude00"', surrogate("\\ud83d")),  # YAML escapes are code points, not UTF-16
    ],
)
def test_text_no_database_stores_is_refused_with_its_field(
    yaml_parser: str, written: str, message: str
) -> None:
    text = f"meta:\n  name: job\nspec:\n  environmentVariables:\n  - name: A\n    value: {written}\n"
    with pytest.raises(InputError) as caught:
        load_yaml(text, "projects/vision/templates/job.yaml")
    (problem,) = caught.value.problems
    assert problem.message == message
    assert problem.path == ("spec", "environmentVariables", 0, "value")
    assert problem.location is not None
    assert (problem.location.file, problem.location.line) == ("projects/vision/templates/job.yaml", 6)
    assert problem.expected == "text without NUL characters or lone surrogates"


@pytest.mark.parametrize(("written", "shown"), [('"k\\0"', "'k\\x00'"), ('"k\\udfff"', "'k\\udfff'")])
def test_a_key_no_database_stores_is_refused(yaml_parser: str, written: str, shown: str) -> None:
    with pytest.raises(InputError) as caught:
        load_yaml(f"spec:\n  image: x\n  {written}: 1\n", "f.yaml")
    (problem,) = caught.value.problems
    assert problem.message.startswith(f"the key {shown} holds a ")
    assert problem.path == ("spec",)
    assert line_of(problem) == 3
    assert problem.expected == "keys without NUL characters or lone surrogates"


def test_an_escape_beyond_unicode_is_invalid_yaml(yaml_parser: str) -> None:
    with pytest.raises(InputError) as caught:
        load_yaml('a: "\\U00110000"\n', "f.yaml")
    (problem,) = caught.value.problems
    assert "invalid Unicode character escape code" in problem.message
    assert line_of(problem) == 1


def test_validate_refuses_every_unstorable_text_and_non_finite_number(write_tree: WriteTree) -> None:
    root = write_tree(
        {
            "system/defaults.yaml": (
                'spec:\n  image: "a\\0b"\n  compute:\n    cpuCoreRequest: 1e400\n    cpuCoreLimit: .nan\n'
                '  "l\\udfff": x\n'
            )
        }
    )
    result = subprocess.run(
        [sys.executable, "-m", "template_engine", "validate", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout + result.stderr
    assert "4 problem(s) in 1 file(s)" in out
    for message, at, line in [
        (NUL, "spec.image", 2),
        (TOO_LARGE.format("1e400"), "spec.compute.cpuCoreRequest", 4),
        (".nan is not a finite number", "spec.compute.cpuCoreLimit", 5),
        ("the key 'l\\udfff' holds a lone surrogate (\\udfff), which is not Unicode text", "spec", 6),
    ]:
        assert f"error: {message}\n    at: {at}\n    in: system/defaults.yaml:{line}:" in out
    assert "valid number" not in out


@pytest.mark.parametrize("sign", ["", "-"])
def test_an_integer_with_too_many_digits_has_a_plain_message(sign: str) -> None:
    digits = MAX_INT_DIGITS + 1
    with pytest.raises(InputError) as caught:
        load_yaml(f"spec:\n  numWorkers: {sign}{'7' * digits}\n", "f.yaml")
    (problem,) = caught.value.problems
    assert problem.message == f"integer has {digits} digits, more than {MAX_INT_DIGITS}"
    assert problem.path == ("spec", "numWorkers")
    assert line_of(problem) == 2
    assert "set_int_max_str_digits" not in caught.value.render()
    # the longest accepted integer is read as a number
    assert load_yaml(f"n: {'7' * MAX_INT_DIGITS}\n", "f.yaml").data["n"] > 0


#: An environment asset whose ``environmentVariables:`` moved two spaces left (line 5): PyYAML stops at
#: line 10.
KEY_MOVED_LEFT = """\
meta:
  name: horovod
spec:
  image: horovod/horovod:0.28.1
environmentVariables:
  - name: HOROVOD_GPU_OPERATIONS
    value: NCCL
  - name: OMPI_MCA_btl_tcp_if_include
    value: eth0
  ports:
  - name: sshd
    container: 22
"""


def _syntax_problem(text: str) -> Problem:
    with pytest.raises(InputError) as caught:
        load_yaml(text, "f.yaml")
    (problem,) = caught.value.problems
    return problem


def test_an_indentation_error_points_at_the_line_to_change() -> None:
    """Issue 31: PyYAML stops five lines below a key moved left; the problem is at that key, in words, with
    where the parser stopped as the second position."""
    problem = _syntax_problem(KEY_MOVED_LEFT)
    assert problem.location == Location("f.yaml", 5, 1)
    assert [r.line for r in problem.related] == [10]
    assert problem.message.startswith(
        "invalid YAML: the indentation of this line does not match its block: expected 2 spaces, found 0 "
        "(the parser stopped at line 10: "
    )
    assert problem.expected is not None and problem.expected.startswith("2 spaces of indentation here")
    # a key one space too far right: at its own line
    over = _syntax_problem("spec:\n  image: x\n   command: y\n  args: z\n")
    assert (over.location, over.related) == (Location("f.yaml", 3, 4), ())
    assert "expected 2 spaces, found 3" in over.message
    # a list item's key one space short of the item's column: that column, not the list's (both parse)
    item = _syntax_problem("spec:\n  labels:\n  - name: a\n   value: b\n")
    assert item.location == Location("f.yaml", 4, 4)
    assert "expected 4 spaces, found 3" in item.message


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        # a quote never closed runs on to the next quote: the problem is where it starts
        ("spec:\n  labels:\n  - name: a\n    value: 'b\n  - name: c\n    value: 'd'\n", 4, "closing quote"),
        # a key without its ':' (re-indenting it would only make it part of the text above)
        ("spec:\n  image: x\n  command\n  args: y\n", 3, "is a ':' missing?"),
        # a ': ' inside a plain value: no indentation makes it parse
        ("spec:\n  args: --foo key: value\n", 2, "quote a value that holds ': '"),
        # not about indentation: PyYAML's words, at its position
        ("a: 1\n---\nb: 2\n", 2, "invalid YAML: expected a single document in the stream"),
    ],
)
def test_other_syntax_errors_are_explained_in_words(text: str, line: int, words: str) -> None:
    problem = _syntax_problem(text)
    assert problem.location is not None and problem.location.line == line
    assert words in problem.message
    assert "a file is read no further than its first syntax error" in str(problem.expected)


def test_the_search_for_the_line_to_change_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from template_engine.loader import yaml_errors

    tries: list[int] = []
    real = yaml_errors._parses
    monkeypatch.setattr(yaml_errors, "_parses", lambda *a: tries.append(len(a[0])) or real(*a))
    items = "".join(f"  - name: V{i}\n    value: '{i}'\n" for i in range(600))
    text = "spec:\n  environmentVariables:\n" + items + " image: x\n  args: y\n"
    problem = _syntax_problem(text)
    assert problem.location is not None and problem.location.line == 1203
    assert 0 < len(tries) <= yaml_errors.SEARCH_BUDGET // len(text)
    tries.clear()
    _syntax_problem(text + "#" * yaml_errors.MAX_SEARCH_TEXT)  # too long to search: the parser's position
    assert tries == []


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("spec:\n\timage: x\n", 2, 1),
        ("spec:\n  image: x\n\t  workingDir: /w\n", 3, 1),
        ("spec:\n  labels:\n  - name: a\n  \t value: b\n", 4, 3),
    ],
)
def test_tab_indentation_says_so(text: str, line: int, column: int) -> None:
    with pytest.raises(InputError) as caught:
        load_yaml(text, "projects/vision/defaults.yaml")
    (problem,) = caught.value.problems
    assert problem.message == "tabs are not allowed for indentation in YAML; use spaces"
    assert problem.location is not None
    assert (problem.location.file, problem.location.line, problem.location.column) == (
        "projects/vision/defaults.yaml",
        line,
        column,
    )


# -- files of a templates folder -----------------------------------------------------------------------------


def test_a_broken_file_fails_only_the_compositions_that_need_it(
    write_tree: WriteTree, preview: Preview
) -> None:
    root = write_tree(
        {
            "projects/nlp/defaults.yaml": "spec:\n  image: [unclosed\n",
            "projects/nlp/templates/other.yaml": "meta:\n  name: other\nspec:\n  image: x\n",
        }
    )
    org = load_org(root)
    (problem,) = problems_of(org, "projects/nlp/defaults.yaml")
    assert problem.location is not None and problem.location.file == "projects/nlp/defaults.yaml"
    assert preview(root, "job", "vision").combined_spec["image"] == "python:3.11"
    with pytest.raises(InputError) as caught:
        preview(root, "other", "nlp")
    assert "projects/nlp/defaults.yaml" in caught.value.render()


def test_unknown_field_has_a_did_you_mean_hint(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree({"system/defaults.yaml": "spec:\n  image: x\n  imagePullPolicys: Always\n"})
    (problem,) = problems_of(load_org(root), "system/defaults.yaml")
    assert problem.message == "unknown field 'imagePullPolicys' (did you mean 'imagePullPolicy'?)"
    assert problem.path == ("spec", "imagePullPolicys")
    assert line_of(problem) == 3
    with pytest.raises(InputError, match="did you mean 'imagePullPolicy'"):
        preview(root, "job", "vision")


def test_a_problem_names_the_line_of_the_offending_key(write_tree: WriteTree) -> None:
    # An unknown field whose value is a block mapping: the line is where the field is written (2), not the
    # line of the first key inside it (3).
    root = write_tree({"system/defaults.yaml": "spec:\n  computee:\n    cpuCoreRequest: 1\n"})
    (problem,) = problems_of(load_org(root), "system/defaults.yaml")
    assert "unknown field 'computee'" in problem.message
    assert line_of(problem) == 2


@pytest.mark.parametrize(
    ("value", "needle"),
    [("'2'", "'2'"), ("0", "0"), ("-3", "-3"), ("2.5", "2.5"), ("true", "True")],
)
def test_wrong_number_of_workers(write_tree: WriteTree, value: str, needle: str) -> None:
    body = f"meta:\n  name: job\nspec:\n  image: x\n  numWorkers: {value}\n"
    root = write_tree({"projects/vision/templates/job.yaml": body})
    (problem,) = problems_of(load_org(root), "projects/vision/templates/job.yaml")
    assert problem.path == ("spec", "numWorkers")
    assert needle in problem.message
    assert problem.expected
    assert line_of(problem) == 5


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("distributedFramework", "Horovod"),
        ("imagePullPolicy", "Sometimes"),
        ("preemptibility", "maybe"),
        ("restartPolicy", "Forever"),
        ("cleanPodPolicy", "Some"),
    ],
)
def test_enum_values_out_of_range(write_tree: WriteTree, field: str, value: str) -> None:
    root = write_tree({"system/defaults.yaml": f"spec:\n  {field}: {value}\n"})
    (problem,) = problems_of(load_org(root), "system/defaults.yaml")
    assert problem.path == ("spec", field)
    assert repr(value) in problem.message
    assert line_of(problem) == 2


@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        ("compute:\n    cpuCoreLimit", "1e308", "(YAML reads 1e308 as text; write 1.0e+308)"),
        ("compute:\n    cpuCoreRequest", "1E5", "(YAML reads 1E5 as text; write 1.0e+5)"),
        ("compute:\n    cpuCoreRequest", "2.5e3", "(YAML reads 2.5e3 as text; write 2.5e+3)"),
        ("compute:\n    cpuCoreRequest", "-2e-3", "(YAML reads -2e-3 as text; write -2.0e-3)"),
        ("numWorkers", "1e2", "(YAML reads 1e2 as text; write 100)"),
    ],
)
def test_a_number_yaml_1_1_reads_as_text_says_how_to_write_it(
    write_tree: WriteTree, field: str, value: str, hint: str
) -> None:
    """PyYAML (YAML 1.1) reads ``1e308`` (no dot, no exponent sign) as text, though YAML 1.2 and JSON read a
    number: the message says so, and how to write it."""
    root = write_tree({"system/defaults.yaml": f"spec:\n  {field}: {value}\n"})
    (problem,) = problems_of(load_org(root), "system/defaults.yaml")
    assert problem.message == f"invalid value {value!r} {hint}"
    assert problem.path[-1] == field.split()[-1]


def test_other_text_where_a_number_belongs_gets_no_yaml_hint(write_tree: WriteTree) -> None:
    root = write_tree({"system/defaults.yaml": "spec:\n  compute:\n    cpuCoreLimit: 1e5x\n"})
    (problem,) = problems_of(load_org(root), "system/defaults.yaml")
    assert problem.message == "invalid value '1e5x'"


def test_enum_inside_a_keyed_item(write_tree: WriteTree) -> None:
    text = "spec:\n  tolerations:\n  - name: t\n    operator: Equals\n"
    root = write_tree({"system/defaults.yaml": text})
    (problem,) = problems_of(load_org(root), "system/defaults.yaml")
    assert problem.path == ("spec", "tolerations", 0, "operator")
    assert line_of(problem) == 4


def test_a_file_with_several_problems_reports_all_of_them(write_tree: WriteTree) -> None:
    body = """\
        meta:
          name: job
        spec:
          image: x
          imagePullPolicys: Always
          numWorkers: 0
          distributedFramework: Horovod
          compute:
            cpuCoreRequest: lots
        """
    root = write_tree({"projects/vision/templates/job.yaml": body})
    problems = problems_of(load_org(root), "projects/vision/templates/job.yaml")
    paths = {p.path for p in problems}
    assert paths == {
        ("spec", "imagePullPolicys"),
        ("spec", "numWorkers"),
        ("spec", "distributedFramework"),
        ("spec", "compute", "cpuCoreRequest"),
    }
    assert sorted(line_of(p) or 0 for p in problems) == [5, 6, 7, 9]


def test_a_file_the_schema_refuses_reports_its_other_problems_in_the_same_run(write_tree: WriteTree) -> None:
    """Issue 31: the schema's problems, the rules beyond it (keyed items, values Run:ai refuses, the master
    conflict) and a meta.name that is not the file's, all in one run, not one kind per run."""
    body = """\
        meta:
          name: other
        spec:
          numWorkers: four
          environmentVariables:
          - value: '1'
          - name: A
          - name: A
          compute:
            cpuMemoryRequest: 2GB
        master:
          spec:
            image: y
        masterSpecSameAsWorker: true
        """
    root = write_tree({"projects/vision/templates/job.yaml": body})
    problems = problems_of(load_org(root), "projects/vision/templates/job.yaml")
    assert [(p.path, line_of(p)) for p in problems] == [
        (("spec", "numWorkers"), 4),
        (("meta", "name"), 2),
        (("master",), 11),
        (("spec", "environmentVariables", 0), 6),
        (("spec", "environmentVariables", 2), 8),
        (("spec", "compute", "cpuMemoryRequest"), 10),
    ]
    # The same for an asset and a defaults file: nothing waits for the schema's problems to be fixed.
    asset = "meta:\n  name: other\nspec:\n  cpuCoreRequest: lots\n  cpuMemoryRequest: 2GB\n"
    defaults = "spec:\n  numWorkers: -1\n  labels:\n  - value: a\n"
    root = write_tree({"assets/computes/small.yaml": asset, "system/defaults.yaml": defaults})
    org = load_org(root)
    assert [p.path for p in problems_of(org, "assets/computes/small.yaml")] == [
        ("spec", "cpuCoreRequest"),
        ("spec", "cpuMemoryRequest"),
        ("meta", "name"),
    ]
    assert [p.path for p in problems_of(org, "system/defaults.yaml")] == [
        ("spec", "numWorkers"),
        ("spec", "labels", 0),
    ]


def test_keyed_list_problems_of_one_file_are_reported_together(write_tree: WriteTree) -> None:
    text = """\
        spec:
          environmentVariables:
          - value: '1'
          - name: A
          - name: A
        """
    root = write_tree({"system/defaults.yaml": text})
    problems = problems_of(load_org(root), "system/defaults.yaml")
    assert [p.path for p in problems] == [
        ("spec", "environmentVariables", 0),
        ("spec", "environmentVariables", 2),
    ]
    duplicate = problems[1]
    assert line_of(duplicate) == 5
    assert [r.line for r in duplicate.related] == [4]


def test_a_document_that_is_not_a_mapping(write_tree: WriteTree) -> None:
    root = write_tree({"system/defaults.yaml": "- image: x\n"})
    (problem,) = problems_of(load_org(root), "system/defaults.yaml")
    assert "mapping" in problem.message


def test_a_file_that_is_not_utf8(write_tree: WriteTree) -> None:
    root = write_tree({})
    (root / "system").mkdir()
    (root / "system" / "defaults.yaml").write_bytes(b"spec:\n  image: \xff\xfe\n")
    (problem,) = problems_of(load_org(root), "system/defaults.yaml")
    assert "UTF-8" in problem.message


def test_missing_required_meta(write_tree: WriteTree) -> None:
    root = write_tree({"projects/vision/templates/job.yaml": "spec:\n  image: x\n"})
    (problem,) = problems_of(load_org(root), "projects/vision/templates/job.yaml")
    assert "'meta'" in problem.message


def test_an_empty_defaults_file_is_an_absent_layer(write_tree: WriteTree, preview: Preview) -> None:
    root = write_tree({"system/defaults.yaml": "", "projects/vision/defaults.yaml": "# nothing yet\n"})
    assert load_org(root).broken == {}
    assert preview(root, "job", "vision").combined_spec["image"] == "python:3.11"


# -- org.yaml, folders, names --------------------------------------------------------------------------------


def test_missing_org_yaml(tmp_path: Path) -> None:
    (tmp_path / "system").mkdir()
    with pytest.raises(InputError) as caught:
        load_org(tmp_path)
    assert "org.yaml" in caught.value.render()


def test_missing_templates_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_org(tmp_path / "nowhere")
    assert "does not exist" in caught.value.render()


def test_a_project_listed_in_two_departments(write_tree: WriteTree) -> None:
    org_yaml = """\
        departments:
        - name: research
          projects:
          - vision
        - name: applied
          projects:
          - recsys
          - vision
        """
    root = write_tree({"org.yaml": org_yaml})
    with pytest.raises(InputError) as caught:
        load_org(root)
    (problem,) = caught.value.problems
    assert (
        "'vision'" in problem.message and "'research'" in problem.message and "'applied'" in problem.message
    )
    assert problem.location is not None and problem.location.file == "org.yaml"
    assert problem.location.line == 8


def test_a_department_listed_twice(write_tree: WriteTree) -> None:
    org_yaml = "departments:\n- name: research\n  projects: [vision]\n- name: research\n  projects: [nlp]\n"
    with pytest.raises(InputError, match="department 'research' is listed twice"):
        load_org(write_tree({"org.yaml": org_yaml}))


def test_org_yaml_with_an_unknown_field(write_tree: WriteTree) -> None:
    with pytest.raises(InputError, match="unknown field 'department'"):
        load_org(write_tree({"org.yaml": "department:\n- name: research\n"}))


@pytest.mark.parametrize(
    ("folder", "kind"), [("departments/ghost", "department"), ("projects/ghost", "project")]
)
def test_a_folder_for_an_unknown_scope(write_tree: WriteTree, folder: str, kind: str) -> None:
    root = write_tree({f"{folder}/defaults.yaml": "spec:\n  image: x\n"})
    (problem,) = problems_of(load_org(root), folder)
    assert problem.message.startswith(f"unknown {kind} 'ghost'")


def test_template_meta_name_must_match_its_file(write_tree: WriteTree) -> None:
    body = "meta:\n  name: jobb\nspec:\n  image: x\n"
    root = write_tree({"projects/vision/templates/job.yaml": body})
    (problem,) = problems_of(load_org(root), "projects/vision/templates/job.yaml")
    assert "'jobb'" in problem.message and "file name" in problem.message
    assert problem.path == ("meta", "name")
    assert line_of(problem) == 2


@pytest.mark.parametrize(
    ("rel", "body"),
    [
        ("projects/vision/templates/-job.yaml", "meta:\n  name: -job\n"),
        ("assets/environments/a.yaml", "meta:\n  name: a b\nspec:\n  image: x\n"),
    ],
)
def test_an_invalid_name_is_explained_in_words(write_tree: WriteTree, rel: str, body: str) -> None:
    (problem,) = problems_of(load_org(write_tree({rel: body})), rel)
    assert problem.path == ("meta", "name")
    assert problem.expected is not None
    assert "letters, digits, '.', '_' and '-'" in problem.expected
    assert "starts and ends with a letter or digit" in problem.expected
    assert "^" not in problem.render() and "[A-Za-z" not in problem.render()


@pytest.mark.parametrize(
    ("org_yaml", "message", "path"),
    [
        (
            "departments:\n  research: [vision]\n",
            "departments must be a list, not a mapping",
            ("departments",),
        ),
        (
            "departments:\n- research\n",
            "departments[0] must be a mapping, not the text 'research'",
            ("departments", 0),
        ),
        (
            "departments:\n- name: research\n  projects: {vision: 1}\n",
            "departments[0].projects must be a list, not a mapping",
            ("departments", 0, "projects"),
        ),
    ],
)
def test_a_mis_shaped_org_yaml_says_what_shape_is_expected(
    write_tree: WriteTree, org_yaml: str, message: str, path: tuple[str | int, ...]
) -> None:
    with pytest.raises(InputError) as caught:
        load_org(write_tree({"org.yaml": org_yaml}))
    (problem,) = caught.value.problems
    assert problem.message == message
    assert problem.path == path
    assert problem.expected is not None and "for example:" in problem.expected
    assert "name: research, projects: [vision, nlp]" in problem.expected
    assert "invalid value dict" not in caught.value.render()


def test_asset_meta_name_must_match_its_file(write_tree: WriteTree) -> None:
    root = write_tree({"assets/environments/torch.yaml": "meta:\n  name: pytorch\nspec:\n  image: x\n"})
    (problem,) = problems_of(load_org(root), "assets/environments/torch.yaml")
    assert "'pytorch'" in problem.message


@pytest.mark.parametrize(
    "storage",
    [
        "    pvc:\n    - claimName: a\n      path: /a\n    - claimName: b\n      path: /b\n",
        "    pvc:\n    - claimName: a\n      path: /a\n    nfs:\n    - server: s\n      path: /p\n",
        "    pvc: []\n",
    ],
    ids=["two-items", "two-kinds", "no-item"],
)
def test_a_datasource_asset_holds_exactly_one_item(write_tree: WriteTree, storage: str) -> None:
    text = "meta:\n  name: data\nspec:\n  storage:\n" + storage
    root = write_tree({"assets/datasources/data.yaml": text})
    (problem,) = problems_of(load_org(root), "assets/datasources/data.yaml")
    assert "exactly one item" in problem.message
    assert problem.path == ("spec", "storage")


@pytest.mark.parametrize(
    ("folder", "spec", "field"),
    [
        ("environments", "  compute:\n    cpuCoreRequest: 1\n", "compute"),
        ("environments", "  numWorkers: 2\n", "numWorkers"),
        ("computes", "  image: x\n", "image"),
        ("datasources", "  image: x\n  storage:\n    pvc:\n    - claimName: c\n", "image"),
    ],
)
def test_an_asset_kind_limits_its_fields(write_tree: WriteTree, folder: str, spec: str, field: str) -> None:
    root = write_tree({f"assets/{folder}/a.yaml": "meta:\n  name: a\nspec:\n" + spec})
    problems = problems_of(load_org(root), f"assets/{folder}/a.yaml")
    assert [p.path for p in problems] == [("spec", field)], rendered(problems)
    assert f"field {field!r}" in problems[0].message
    assert line_of(problems[0]) == 4


# -- composing never changes what was loaded -----------------------------------------------------------------


def _snapshot(org: Org) -> dict[str, Any]:
    sources: dict[str, Any] = {}
    for entry in org.defaults.values():
        sources[entry.source.file] = entry.source.data
    for by_name in org.templates.values():
        for template in by_name.values():
            sources[template.source.file] = template.source.data
    for by_name in org.assets.values():
        for asset in by_name.values():
            sources[asset.source.file] = asset.source.data
    return copy.deepcopy(sources)


def test_composing_never_mutates_the_loaded_org(example_root: Path) -> None:
    org = load_org(example_root)
    before = _snapshot(org)
    assert len(before) > 20
    pairs = org.views()
    first = [compose(org, template, view, {"user": "alice"}).to_response() for view, template in pairs]
    assert _snapshot(org) == before
    second = [compose(org, template, view, {"user": "alice"}).to_response() for view, template in pairs]
    assert _snapshot(org) == before
    assert first == second


def test_changing_a_result_does_not_reach_the_sources(example_root: Path) -> None:
    org = load_org(example_root)
    before = _snapshot(org)
    view = org.view_of("vision")
    composition = compose(org, org.find_template("vit-finetune", view), view)
    composition.combined_spec["environmentVariables"][0]["value"] = "changed"
    composition.combined_spec["compute"]["cpuCoreRequest"] = 999
    composition.worker.spec["labels"].clear()
    assert _snapshot(org) == before


def test_a_response_shares_nothing_with_the_loaded_org(example_root: Path) -> None:
    # The response's own `spec`, `assets` and `master` are the template "as written"; a caller (the service)
    # that edits a response must not edit the loaded template.
    org = load_org(example_root)
    before = _snapshot(org)
    view = org.view_of("vision")
    for name in ("vit-finetune", "tf-parameter-server"):
        response = compose(org, org.find_template(name, view), view).to_response()
        response["spec"]["distributedFramework"] = "changed"
        response["assets"]["datasources"].clear()
        if response["master"] is not None:
            response["master"]["spec"]["labels"].clear()
        for value in response["spec"].values():
            if isinstance(value, list):
                value.clear()
    assert _snapshot(org) == before


def test_a_quantity_in_bytes_offers_the_quantities_it_may_mean(write_tree: WriteTree) -> None:
    """Issue 31: did-you-mean for a quantity field, at the line of the value."""
    text = "spec:\n  compute:\n    cpuMemoryRequest: 2GB\n    cpuMemoryLimit: 4Gi\n"
    (problem,) = problems_of(load_org(write_tree({"system/defaults.yaml": text})), "system/defaults.yaml")
    assert problem.path == ("spec", "compute", "cpuMemoryRequest") and line_of(problem) == 3
    assert problem.expected == (
        "a quantity written as text, such as '512Mi', '20M' or '1Gi' (did you mean '2G' or '2Gi'?)"
    )


def test_org_yaml_node_pools_are_ids_given_once(write_tree: WriteTree) -> None:
    """Issue 30's review: a node pool id is 1 to 18 ASCII digits (Run:ai's ``ResourcesNullable.nodePool.id``
    is a string of a node pool's numeric id), and a unit gives each node pool's quotas once."""
    not_an_id = (
        "departments:\n- name: research\n  projects: [vision]\n"
        "  resources: [{nodePool: {id: '\u00b3'}, gpu: {deserved: 1}}]\n"
    )
    with pytest.raises(InputError) as caught:
        load_org(write_tree({"org.yaml": not_an_id}))
    (problem,) = caught.value.problems
    assert problem.path == ("departments", 0, "resources", 0, "nodePool", "id"), problem.render()
    assert problem.expected == "an id of 1 to 18 ASCII digits, such as '1'", problem.render()
    twice = (
        "departments:\n- name: research\n  projects: [vision]\n  resources:\n"
        "  - {nodePool: {id: '1'}, gpu: {deserved: 1}}\n  - {nodePool: {id: '1'}, gpu: {deserved: 2}}\n"
    )
    with pytest.raises(InputError) as caught:
        load_org(write_tree({"org.yaml": twice}))
    (problem,) = caught.value.problems
    assert problem.path == ("departments", 0, "resources", 1, "nodePool", "id"), problem.render()
    assert problem.expected is not None and problem.expected.startswith("entry [0] already gives")
    assert problem.location is not None and problem.location.line == 6, problem.render()
