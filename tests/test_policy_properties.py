"""Properties of the policy step (POLICY.md), checked with hypothesis on small in-memory orgs.

- A policy without rules changes nothing: the composition equals that of the org without ``policy.yaml``.
- Rules that cannot fail change nothing either.
- Locking what the request side does not touch (a key of a keyed list, a scalar field) changes nothing.
- Composing never changes the loaded org, and what it returns shares nothing with it, policies in play.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine import Composition, compose, load_org
from template_engine.compose import MergeCache
from template_engine.loader.sources import MappingSource
from template_engine.org import Org

PROPERTIES = settings(max_examples=60, derandomize=True, deadline=None)

ORG_YAML = """\
departments:
- name: research
  projects:
  - vision
  - nlp
- name: applied
  projects:
  - recsys
"""

SHARED = {
    "meta": {"name": "shared"},
    "spec": {"storage": {"pvc": [{"claimName": "shared", "path": "/shared"}]}},
}

NAMES = ("A", "B", "C", "D")
POOLS = ("a100", "h100", "l40s")
PULL = ("Always", "IfNotPresent", "Never")
NODE_TYPES = ("a100", "h100")
#: Where a policy file may be, seen from project vision (its branch: system, research, vision).
SCOPES = ("system/policy.yaml", "departments/research/policy.yaml", "projects/vision/policy.yaml")

env_items = st.lists(
    st.builds(
        lambda name, value: {"name": name, "value": value},
        st.sampled_from(NAMES),
        st.sampled_from(["1", "x", "on"]),
    ),
    max_size=3,
    unique_by=lambda item: item["name"],
)
compute = st.fixed_dictionaries(
    {},
    optional={
        "cpuCoreRequest": st.sampled_from([0.5, 1, 2]),
        "gpuDevicesRequest": st.integers(0, 4),
        "cpuMemoryRequest": st.sampled_from(["1Gi", "500M", "2G"]),
    },
)
#: A spec of a few fields of every kind: strings, an enum, an integer, a section, a scalar list, a keyed list.
specs = st.fixed_dictionaries(
    {},
    optional={
        "image": st.sampled_from(["python:3.11", "nvcr.io/nvidia/pytorch:24.05-py3"]),
        "nodeType": st.sampled_from(NODE_TYPES),
        "imagePullPolicy": st.sampled_from(PULL),
        "compute": compute,
        "nodePools": st.lists(st.sampled_from(POOLS), min_size=1, max_size=2, unique=True),
        "environmentVariables": env_items,
    },
)
worker_specs = st.tuples(specs, st.one_of(st.none(), st.integers(1, 8))).map(
    lambda pair: {**pair[0], "numWorkers": pair[1]} if pair[1] is not None else pair[0]
)


@st.composite
def templates(draw: st.DrawFn) -> dict[str, Any]:
    """A template: its spec with perhaps exclusions, and perhaps a master of its own."""
    spec = draw(worker_specs)
    spec.setdefault("distributedFramework", draw(st.sampled_from(["PyTorch", "TF"])))
    excluded = draw(st.lists(st.sampled_from(NAMES), max_size=2, unique=True))
    env = [i for i in spec.get("environmentVariables", []) if i["name"] not in excluded]
    env += [{"name": name, "exclude": True} for name in excluded]
    if env:
        spec["environmentVariables"] = env
    template: dict[str, Any] = {"meta": {"name": "job"}, "spec": spec}
    if draw(st.booleans()):
        template["masterSpecSameAsWorker"] = False
        if draw(st.booleans()):
            template["master"] = {"spec": draw(specs)}
    return template


@st.composite
def orgs(draw: st.DrawFn) -> dict[str, Any]:
    """The files of an org without policies: system and project defaults, the template, a data source."""
    return {
        "org.yaml": ORG_YAML,
        "system/defaults.yaml": {"spec": draw(worker_specs)},
        "projects/vision/defaults.yaml": {"spec": draw(specs)},
        "projects/vision/templates/job.yaml": draw(templates()),
        "assets/datasources/shared.yaml": SHARED,
    }


def load(files: Mapping[str, Any]) -> Org:
    text = {k: v if isinstance(v, str) else yaml.safe_dump(v, sort_keys=False) for k, v in files.items()}
    return load_org(MappingSource(text))


def composed(files: Mapping[str, Any], project: str = "vision") -> dict[str, Any]:
    org = load(files)
    view = org.view_of(project)
    return compose(org, org.find_template("job", view), view).to_response()


def with_policy(files: Mapping[str, Any], policies: Mapping[str, Any]) -> dict[str, Any]:
    return {**files, **policies}


# -- policies that change nothing ----------------------------------------------------------------------------

NO_RULES = st.sampled_from(
    [
        "",
        "# nothing yet\n",
        "rules: {}\n",
        "rules:\n  worker: {}\n",
        "rules:\n  worker: {}\n  master: {}\n",
        "rules:\n  worker:\n    compute: {}\n",
        "imposedAssets: {}\n",
        "imposedAssets:\n  worker: []\n",
        "rules: null\nimposedAssets: null\n",
    ]
)


@PROPERTIES
@given(files=orgs(), policy=NO_RULES, where=st.sampled_from(SCOPES))
def test_a_policy_without_rules_changes_nothing(files: dict[str, Any], policy: str, where: str) -> None:
    assert composed(with_policy(files, {where: policy})) == composed(files)


#: Rule objects no value of the strategies above can break, by field (worker fields; ``numWorkers`` only).
NEVER_FAILING: dict[str, Any] = {
    "numWorkers": {"min": 1, "max": 1000, "step": 1},
    "image": {"required": False, "canEdit": True},
    "nodeType": {"canEdit": True, "options": [{"value": v} for v in NODE_TYPES]},
    "imagePullPolicy": {"options": [{"value": v} for v in PULL]},
    "nodePools": {"canEdit": True, "options": [{"value": v} for v in POOLS]},
    "compute": {
        "cpuCoreRequest": {"min": 0, "max": 64, "step": 0.5},
        "gpuDevicesRequest": {"min": 0, "max": 8, "step": 1},
        "cpuMemoryRequest": {"min": "1M", "max": "1Ti"},
    },
    "environmentVariables": {"instances": {"canAdd": True, "locked": []}},
}


@PROPERTIES
@given(
    files=orgs(),
    placed=st.dictionaries(st.sampled_from(sorted(NEVER_FAILING)), st.sampled_from(SCOPES), min_size=1),
    on_master=st.booleans(),
)
def test_rules_that_cannot_fail_change_nothing(
    files: dict[str, Any], placed: dict[str, str], on_master: bool
) -> None:
    policies: dict[str, dict[str, Any]] = {}
    for name, where in placed.items():
        rules = policies.setdefault(where, {"rules": {}})["rules"]
        rules.setdefault("worker", {})[name] = NEVER_FAILING[name]
        if on_master and name != "numWorkers":
            rules.setdefault("master", {})[name] = NEVER_FAILING[name]
    assert composed(with_policy(files, policies)) == composed(files)


@PROPERTIES
@given(
    files=orgs(),
    key=st.sampled_from(NAMES),
    field=st.sampled_from(["nodeType", "imagePullPolicy", "nodePools"]),
    where=st.sampled_from(SCOPES),
)
def test_locking_what_the_request_side_does_not_touch_changes_nothing(
    files: dict[str, Any], key: str, field: str, where: str
) -> None:
    template = copy.deepcopy(files["projects/vision/templates/job.yaml"])
    for spec in (template["spec"], (template.get("master") or {}).get("spec") or {}):
        spec.pop(field, None)
        env = [i for i in spec.pop("environmentVariables", []) if i["name"] != key]
        if env:
            spec["environmentVariables"] = env
    files = {**files, "projects/vision/templates/job.yaml": template}
    # nodePools is an array: a rule object without canEdit locks it.
    rules = {
        field: {} if field == "nodePools" else {"canEdit": False},
        "environmentVariables": {"instances": {"locked": [key]}},
    }
    policy = {"rules": {"worker": rules, "master": rules}}
    assert composed(with_policy(files, {where: policy})) == composed(files)


# -- composing changes nothing it is given -------------------------------------------------------------------

#: Rule objects of every kind, some of which fail on some orgs; with ``defaultFrom`` and imposed assets.
SOME_RULES: dict[str, Any] = {
    "numWorkers": {"min": 2, "max": 4, "step": 2},
    "image": {"required": True, "options": [{"value": "python:3.11"}]},
    "nodeType": {"canEdit": False},
    "imagePullPolicy": {"options": [{"value": "IfNotPresent"}]},
    "nodePools": {"required": True},
    "compute": {
        "cpuCoreLimit": {"defaultFrom": {"field": "cpuCoreRequest", "factor": 2}, "max": 2},
        "cpuMemoryLimit": {"defaultFrom": {"field": "cpuMemoryRequest", "factor": 1.5}},
        "gpuDevicesRequest": {"max": 2},
    },
    "environmentVariables": {"instances": {"locked": ["A", "B"], "canAdd": False}},
    "storage": {"pvc": {"attributes": {"path": {"options": [{"value": "/data"}]}}}},
}


def _scramble(value: Any) -> None:
    """Change every mapping and list inside ``value`` in place."""
    if isinstance(value, dict):
        for inner in value.values():
            _scramble(inner)
        value["scrambled"] = True
    elif isinstance(value, list):
        for inner in value:
            _scramble(inner)
        value.append("scrambled")


@PROPERTIES
@given(
    files=orgs(),
    placed=st.dictionaries(st.sampled_from(sorted(SOME_RULES)), st.sampled_from(SCOPES)),
    on_master=st.booleans(),
    imposed=st.sets(st.sampled_from(["worker", "master"])),
)
def test_compose_changes_neither_the_org_nor_what_it_returned_before(
    files: dict[str, Any], placed: dict[str, str], on_master: bool, imposed: set[str]
) -> None:
    policies: dict[str, dict[str, Any]] = {}
    for name, where in placed.items():
        rules = policies.setdefault(where, {}).setdefault("rules", {})
        rules.setdefault("worker", {})[name] = SOME_RULES[name]
        if on_master and name != "numWorkers":
            rules.setdefault("master", {})[name] = SOME_RULES[name]
    if imposed:
        policies.setdefault("departments/research/policy.yaml", {})["imposedAssets"] = {
            replica: ["shared"] for replica in sorted(imposed)
        }
    system_job = copy.deepcopy(files["projects/vision/templates/job.yaml"])
    system_job["meta"]["name"] = "sys-job"
    org = load(with_policy({**files, "system/templates/sys-job.yaml": system_job}, policies))
    assert not org.broken, org.broken
    before = copy.deepcopy(org)
    cache: MergeCache = {}

    def run(project: str | None, template: str = "job") -> Composition:
        view = org.view_of(project)
        found = org.find_template(template, view)
        return compose(org, found, view if project else org.own_view(found), cache=cache)

    first = run("vision")
    assert first.policy.rules or first.policy.imposed or not policies
    kept = copy.deepcopy(first.to_response())
    assert org == before
    # What a composition returns shares nothing with the org or the cache: changing it changes no later one.
    response = first.to_response()
    _scramble(first.combined_spec)
    if first.combined_master_spec is not None:
        _scramble(first.combined_master_spec)
    _scramble(response)
    assert org == before
    assert run("vision").to_response() == kept
    run("nlp", "sys-job")
    run(None, "sys-job")
    assert org == before
