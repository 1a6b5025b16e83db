"""The explain view: the view model built from a composition (layer kinds, overridden values, exclusions,
issues at their field, defaultFrom) and the HTML it renders (hostile values stay text, keyboard and text
labels are there, nothing is loaded from elsewhere)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from template_engine import Composition, load_org
from template_engine.cluster.mapping import Manifests
from template_engine.diff import diff_orgs
from template_engine.runnable import RunnableIssue
from template_engine.views.html import render_page
from template_engine.views.manifests import ObjectNode, ValueLabel, manifests_view
from template_engine.views.model import KINDS, NodeView, PageView, explain_page
from template_engine.views.site import build_site

WriteTree = Callable[[Mapping[str, Any]], Path]
Preview = Callable[..., Composition]

FILES: dict[str, Any] = {
    "system/defaults.yaml": """\
        spec:
          image: org/base:1
          workingDir: /org
          environmentVariables:
          - {name: HTTP_PROXY, value: "http://proxy:3128"}
          - {name: TZ, value: UTC}
          labels:
          - {name: tier, value: standard}
        """,
    "system/policy.yaml": """\
        rules:
          worker:
            numWorkers: {max: 4}
            compute:
              cpuCoreLimit:
                defaultFrom: {field: cpuCoreRequest, factor: 2}
        imposedAssets:
          worker: [datasets]
        """,
    "departments/research/defaults.yaml": """\
        spec:
          workingDir: /research
          environmentVariables:
          - {name: HTTP_PROXY, exclude: true}
          labels:
          - {name: tier, value: premium}
        """,
    "projects/vision/defaults.yaml": """\
        spec:
          workingDir: /vision
        """,
    "assets/environments/torch.yaml": """\
        meta: {name: torch}
        spec:
          image: pytorch/pytorch:2.3
          command: torchrun
        """,
    "assets/computes/gpu.yaml": """\
        meta: {name: gpu}
        spec:
          compute: {cpuCoreRequest: 4, gpuDevicesRequest: 1}
        """,
    "assets/datasources/datasets.yaml": """\
        meta: {name: datasets}
        spec:
          storage:
            pvc:
            - {claimName: datasets, path: /data}
        """,
    "projects/vision/templates/job.yaml": """\
        meta: {name: job}
        assets: {environment: torch, compute: gpu}
        spec:
          distributedFramework: PyTorch
          numWorkers: 8
          command: torchrun --standalone
          ports:
          - {name: http, container: 8080}
        """,
}


def nodes(page: PageView, replica: str = "worker") -> dict[str, NodeView]:
    found = next(r for r in page.replicas if r.replica == replica)
    return {node.field: node for top in found.nodes for node in top.walk()}


@pytest.fixture
def page(write_tree: WriteTree, preview: Preview) -> PageView:
    return explain_page(preview(write_tree(FILES), "job", project="vision"))


# -- the view model -----------------------------------------------------------------------------------------


def test_each_value_has_the_kind_of_the_layer_that_set_it(page: PageView) -> None:
    worker = nodes(page)
    assert worker["image"].kind == "environment"
    assert worker["image"].origin is not None
    assert worker["image"].origin.place == "assets/environments/torch.yaml:3"
    assert worker["workingDir"].kind == "project"
    assert worker["command"].kind == "template"
    assert worker["compute.gpuDevicesRequest"].kind == "compute"
    assert worker["environmentVariables[name=TZ].value"].kind == "system"
    assert worker["labels[name=tier].value"].kind == "department"
    assert worker["storage.pvc[name=datasets]"].kind == "imposed"
    assert worker["storage.pvc[name=datasets]"].action == "added"


def test_a_value_lists_the_values_it_overrode_with_file_and_line(page: PageView) -> None:
    worker = nodes(page)
    below = [(o.value, o.origin.kind, o.origin.place) for o in worker["workingDir"].overridden]
    assert below == [
        ('"/org"', "system", "system/defaults.yaml:3"),
        ('"/research"', "department", "departments/research/defaults.yaml:2"),
    ]
    assert [o.value for o in worker["image"].overridden] == ['"org/base:1"']
    assert worker["image"].value == '"pytorch/pytorch:2.3"'
    tooltip = worker["workingDir"].tooltip
    assert "projects/vision/defaults.yaml:2" in tooltip
    assert 'overrode "/org" (system defaults, system/defaults.yaml:3)' in tooltip
    # The key of an item is not a value that was overridden.
    assert worker["labels[name=tier].name"].overridden == []


def test_excluded_items_are_nodes_with_the_layer_that_excluded_them(page: PageView) -> None:
    proxy = nodes(page)["environmentVariables[name=HTTP_PROXY]"]
    assert proxy.shape == "excluded"
    assert proxy.kind == "department"
    assert proxy.origin is not None
    assert proxy.origin.text == "department research defaults, departments/research/defaults.yaml:4"
    assert proxy.value is not None and "http://proxy:3128" in proxy.value  # what it removed
    assert proxy.overridden[0].origin.kind == "system"
    assert proxy.details[0].startswith("excluded by department research defaults")


def test_issues_are_marked_at_their_field_with_rule_and_source(page: PageView) -> None:
    worker = nodes(page)
    assert not page.runnable
    compliance = [i for i in page.issues if i.compliance]
    assert [(i.field, i.rule, i.source) for i in compliance] == [
        ("numWorkers", "max", "system/policy.yaml:3")
    ]
    assert worker["numWorkers"].issues == compliance
    assert compliance[0].anchor == worker["numWorkers"].id
    # A field no layer set, named by a runnable issue, gets a node of its own in sorted place.
    missing = worker["ports[name=http].serviceType"]
    assert missing.shape == "missing"
    assert [i.rule for i in missing.issues] == [None]
    port = worker["ports[name=http]"]
    assert [c.name for c in port.children] == ["container", "name", "serviceType"]
    for issue in page.issues:
        assert issue.anchor is not None
        assert any(issue in node.issues for node in nodes(page, issue.replica).values())
    assert page.status == "not runnable"
    assert page.compliance_issues == 1


def test_default_from_values_name_their_rule(page: PageView) -> None:
    limit = nodes(page)["compute.cpuCoreLimit"]
    assert limit.kind == "policy"
    assert limit.value == "8"
    assert limit.origin is not None
    assert limit.origin.layer.startswith("defaultFrom rule of the system policy: compute.cpuCoreLimit")
    assert limit.origin.place == "system/policy.yaml:5"
    assert any(rule.startswith("default 2 x cpuCoreRequest") for rule in limit.rules)


def test_the_master_same_as_the_worker_is_derived(page: PageView) -> None:
    master = next(r for r in page.replicas if r.replica == "master")
    assert master.present and "same as the worker" in master.note
    image = nodes(page, "master")["image"]
    assert image.action == "derived"
    assert image.kind == "environment"


def test_the_legend_has_every_kind_and_marks_the_used_ones(page: PageView) -> None:
    legend = {kind.key: used for kind, used in page.legend}
    assert list(legend) == [kind.key for kind in KINDS]
    for key in ("system", "department", "project", "imposed", "environment", "compute", "template", "policy"):
        assert legend[key], key
    assert not legend["submission"]


def test_workers_only_has_no_master_tree(write_tree: WriteTree, preview: Preview) -> None:
    files = {**FILES, "projects/vision/defaults.yaml": "masterSpecSameAsWorker: false\n"}
    page = explain_page(preview(write_tree(files), "job", project="vision"))
    master = next(r for r in page.replicas if r.replica == "master")
    assert not master.present and master.nodes == ()
    assert "workers only" in master.note


def test_a_value_carries_its_layer_kind_as_a_value(write_tree: WriteTree, preview: Preview) -> None:
    """A page colours a value by the kind its layer carries (``Location.kind``), never by parsing the label:
    a department named like a template, or a project named like an asset, is still a department's or a
    project's layer (labels once parsed back sorted these wrongly)."""
    files = {
        "org.yaml": "departments:\n- name: template-x\n  projects: [environment-asset-y]\n",
        "system/defaults.yaml": "spec:\n  image: sys\n",
        "departments/template-x/defaults.yaml": "spec:\n  workingDir: /dept\n",
        "projects/environment-asset-y/defaults.yaml": "spec:\n  nodePools: [a]\n",
        "system/templates/job.yaml": (
            "meta: {name: job}\nspec:\n  distributedFramework: PyTorch\n  command: run\n"
        ),
    }
    worker = nodes(explain_page(preview(write_tree(files), "job", project="environment-asset-y")))
    assert worker["image"].kind == "system"
    assert worker["workingDir"].kind == "department"
    assert worker["nodePools"].kind == "project"
    assert worker["command"].kind == "template"


# -- HTML: hostile values stay text --------------------------------------------------------------------------

SCRIPT = "</script><script>alert(1)</script>"
ATTRIBUTE = '" onmouseover="alert(2)" x="'
JAVASCRIPT = "javascript:alert(3)"
#: A project name: free text in org.yaml, and a folder name (no ``/``).
PROJECT = "<img src=x onerror=alert(4)>\"'"


class Page(HTMLParser):
    """Every tag with its attributes, and the text, of an HTML page."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def values(self) -> str:
        """The text and every attribute value, as a browser reads them."""
        attrs = [v or "" for _, a in self.tags for v in a.values()]
        return "\n".join(self.text + attrs)

    def ids(self) -> set[str]:
        return {a["id"] or "" for _, a in self.tags if "id" in a}


def assert_inert(html: str) -> Page:
    """No script, no event handler, no link or resource that runs code or leaves the page."""
    page = Page(html)
    names = [tag for tag, _ in page.tags]
    assert "script" not in names and "img" not in names and "iframe" not in names and "link" not in names
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src", "action", "formaction"):
                assert value is not None
                assert not value.strip().lower().startswith("javascript:"), (tag, value)
                assert "//" not in value, (tag, value)  # nothing external
    assert "<script" not in html.lower()
    return page


def hostile_files() -> dict[str, Any]:
    org = {"departments": [{"name": "research", "projects": ["vision", PROJECT]}]}
    template = {
        "meta": {"name": "job", "description": f"{SCRIPT} {ATTRIBUTE}"},
        "assets": {"environment": "torch"},
        "spec": {
            "distributedFramework": "PyTorch",
            "numWorkers": 2,
            "command": SCRIPT,
            "args": ATTRIBUTE,
            "workingDir": JAVASCRIPT,
            "environmentVariables": [
                {"name": SCRIPT, "value": ATTRIBUTE},
                {"name": "LINK", "value": JAVASCRIPT},
            ],
            "labels": [{"name": "x", "value": SCRIPT}],
            "relatedUrls": [{"url": JAVASCRIPT, "type": "tensorboard"}],
        },
    }
    return {
        "org.yaml": org,
        "system/defaults.yaml": {
            "spec": {
                "image": ATTRIBUTE,
                "labels": [{"name": "x", "value": ATTRIBUTE}],
                "environmentVariables": [{"name": ATTRIBUTE, "value": SCRIPT}],
            }
        },
        "system/policy.yaml": {"rules": {"worker": {"args": {"options": [{"value": SCRIPT}]}}}},
        f"projects/{PROJECT}/defaults.yaml": {
            "spec": {"environmentVariables": [{"name": ATTRIBUTE, "exclude": True}]}
        },
        "assets/environments/torch.yaml": {"meta": {"name": "torch"}, "spec": {"command": ATTRIBUTE}},
        "projects/vision/templates/job.yaml": None,
        "system/templates/job.yaml": template,
    }


def test_hostile_values_are_text_in_every_place(write_tree: WriteTree, preview: Preview) -> None:
    composition = preview(write_tree(hostile_files()), "job", project=PROJECT)
    page = explain_page(composition)
    # Every hostile value reaches the view: the values, an exclusion, an issue quoting a value, the names.
    worker = nodes(page)
    assert SCRIPT in (worker["command"].value or "")
    assert worker[f"environmentVariables[name={ATTRIBUTE}]"].shape == "excluded"
    assert any(SCRIPT in issue.message or ATTRIBUTE in issue.message for issue in page.issues)
    assert PROJECT in page.seen_from
    html = render_page(page, "../index.html")
    parsed = assert_inert(html)
    readable = parsed.values()
    for value in (SCRIPT, ATTRIBUTE.strip('" '), JAVASCRIPT, PROJECT, f"projects/{PROJECT}/defaults.yaml"):
        assert value in readable, value  # shown, as text
    assert SCRIPT not in html and PROJECT not in html
    assert 'onmouseover="alert' not in html
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&#34; onmouseover=&#34;alert(2)&#34;" in html


def write_folder(root: Path, files: Mapping[str, Any]) -> Path:
    for rel, content in files.items():
        if content is None:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    return root


def test_hostile_values_are_text_in_the_index_and_the_diff(tmp_path: Path) -> None:
    new_files = hostile_files()
    new_files["system/defaults.yaml"]["spec"]["bogus" + SCRIPT.replace("/", "")] = 1  # an invalid file
    new_files["projects/vision/defaults.yaml"] = {"spec": {"labels": [{"name": "y", "value": SCRIPT}]}}
    old_files = hostile_files()
    old_files["system/templates/job.yaml"]["spec"]["command"] = "safe"
    new = load_org(write_folder(tmp_path / "new", new_files))
    old = load_org(write_folder(tmp_path / "old", old_files))
    assert new.broken  # the hostile field name is reported, in the index
    site = build_site(new, f"root {SCRIPT}", None, diff_orgs(old, new), f"rev {ATTRIBUTE}")
    assert site.index.rows and any(row.change for row in site.index.rows)
    for rel, html in site.files.items():
        assert_inert(html)
        assert SCRIPT not in html and PROJECT not in html, rel
        assert 'onmouseover="alert' not in html, rel
    index = Page(site.files["index.html"]).values()
    assert SCRIPT in index and PROJECT in index and "unknown field" in index
    changed = [rel for rel, html in site.files.items() if 'class="diff"' in html]
    assert changed
    assert SCRIPT in Page(site.files[changed[0]]).values()


def test_keyboard_focus_and_text_labels(page: PageView) -> None:
    html = render_page(page, "../index.html")
    parsed = assert_inert(html)
    ids = parsed.ids()
    values = [a for tag, a in parsed.tags if tag == "span" and "val" in (a.get("class") or "").split()]
    assert values
    for attrs in values:
        assert attrs.get("tabindex") == "0"
        assert attrs.get("title")
        assert attrs.get("aria-describedby") in ids
    assert sum(tag == "details" for tag, _ in parsed.tags) >= 3
    assert sum(tag == "summary" for tag, _ in parsed.tags) >= 3
    # Readable without colour: every kind's label is written out, next to each value and in the legend.
    text = "\n".join(parsed.text)
    for kind in KINDS:
        assert kind.label in text
    badges = re.findall(r'<span class="badge">([^<]*)</span>', html)
    assert "environment" in badges and "excluded by department" in badges and "defaultFrom" in badges
    # Responsive, self-contained.
    assert any(tag == "meta" and a.get("name") == "viewport" for tag, a in parsed.tags)
    assert "@media (max-width" in html
    assert "http://" not in html.replace("http://proxy:3128", "")
    # Struck through, with the layer that excluded it.
    assert re.search(
        r'data-field="environmentVariables\[name=HTTP_PROXY\]"[^>]*>\s*<div class="entry">', html
    )
    assert "<s>" in html


def test_issue_links_point_at_the_marked_node(page: PageView) -> None:
    html = render_page(page)
    parsed = Page(html)
    ids = parsed.ids()
    links = [a["href"] for tag, a in parsed.tags if tag == "a" and (a.get("href") or "").startswith("#w")]
    assert links and all(link is not None and link[1:] in ids for link in links)
    assert 'class="flag issue">policy rule max<' in html
    assert 'class="flag issue">not runnable<' in html


def test_a_pair_that_fails_to_compose_and_a_pair_that_is_gone(tmp_path: Path) -> None:
    base = {
        "org.yaml": {"departments": [{"name": "research", "projects": ["vision"]}]},
        "projects/vision/templates/job.yaml": {
            "meta": {"name": "job"},
            "assets": {"environment": "missing"},
            "spec": {"image": "python:3.11", "distributedFramework": "PyTorch"},
        },
    }
    old_files = {
        **base,
        "projects/vision/templates/old.yaml": {
            "meta": {"name": "old"},
            "spec": {"image": "python:3.11", "distributedFramework": "PyTorch"},
        },
    }
    new = load_org(write_folder(tmp_path / "new", base))
    old = load_org(write_folder(tmp_path / "old", old_files))
    site = build_site(new, "new", None, diff_orgs(old, new), "old")
    (row,) = site.index.rows
    assert row.status == "fails to compose" and not row.runnable
    assert row.first_issue is not None and "unknown environment asset 'missing'" in row.first_issue
    page = site.files["pairs/projects/vision/job.html"]
    assert "Why it does not compose" in page and "unknown environment asset" in page
    (gone,) = site.index.gone
    assert gone.pair_id == "projects/vision/old" and gone.change == "disappeared"
    assert gone.href == "gone/projects/vision/old.html"
    assert "Changes against old: disappeared" in site.files["gone/projects/vision/old.html"]
    index = site.files["index.html"]
    assert "Pairs of old that are gone" in index and 'href="gone/projects/vision/old.html"' in index
    assert '<td class="nowrap">unknown</td>' in index


# -- the manifests tab --------------------------------------------------------------------------------------


def object_nodes(page: PageView) -> dict[str, ObjectNode]:
    assert page.manifests is not None
    return {n.path: n for obj in page.manifests.objects for top in obj.nodes for n in top.walk()}


JOB = "PyTorchJob.spec.pytorchReplicaSpecs"


def test_each_value_of_the_manifests_is_labelled_by_what_set_it(page: PageView) -> None:
    found = object_nodes(page)
    container = f"{JOB}.Worker.template.spec.containers[0]"

    def label(path: str) -> tuple[str, str, str]:
        got = found[path].label
        assert got is not None, path
        return got.kind, got.badge, got.text

    assert label(f"{container}.image") == (
        "environment",
        "environment",
        "from combinedSpec.image, set by environment asset torch, assets/environments/torch.yaml:3",
    )
    assert found[f"{container}.image"].value == '"pytorch/pytorch:2.3"'
    assert label(f"{container}.workingDir")[:2] == ("project", "project")
    assert label(f"{container}.resources.requests.cpu")[0] == "compute"
    # A defaultFrom value is labelled with its rule, as the spec's tree labels it.
    kind, badge, text = label(f"{container}.resources.limits.cpu")
    assert (kind, badge) == ("policy", "defaultFrom")
    assert "defaultFrom rule of the system policy" in text and "system/policy.yaml" in text
    assert found[f"{container}.resources.limits.cpu"].value == "8"
    assert label(f"{JOB}.Worker.replicas")[0] == "template"
    assert label(f"{container}.env[0].value")[1] == "system"  # TZ: HTTP_PROXY is excluded
    assert label("PyTorchJob.metadata.namespace") == (
        "setting",
        "cluster setting",
        "cluster setting namespacePattern",
    )
    assert label(f"{JOB}.Worker.template.spec.schedulerName")[2] == "cluster setting schedulerName"
    kind, badge, text = label("PyTorchJob.metadata.name")
    assert (kind, badge) == ("derived", "derived")
    assert text.startswith("derived: the template's name 'job'")
    kind, _, text = label(f"{container}.name")
    assert kind == "derived" and "default container" in text
    # The imposed data source is one volume, labelled by the policy that imposed it.
    assert label(f"{JOB}.Worker.template.spec.volumes[0]")[0] == "imposed"
    legend = [kind.key for kind in page.manifests_legend]
    assert legend[:2] == ["setting", "derived"] and "environment" in legend and "system" in legend
    assert "submission" not in legend


def test_a_separate_master_is_labelled_from_its_own_spec(write_tree: WriteTree, preview: Preview) -> None:
    files = {
        "projects/vision/templates/job.yaml": {
            "meta": {"name": "job"},
            "spec": {"image": "python:3.11", "distributedFramework": "PyTorch", "numWorkers": 3},
            "masterSpecSameAsWorker": False,
            "master": {"spec": {"image": "python:3.12", "args": "serve.py"}},
        }
    }
    root = write_tree(files)
    page = explain_page(preview(root, "job", project="vision"))
    lines = (root / "projects/vision/templates/job.yaml").read_text(encoding="utf-8").splitlines()
    line = 1 + next(i for i, text in enumerate(lines) if "python:3.12" in text)
    found = object_nodes(page)
    master = found[f"{JOB}.Master.template.spec.containers[0].image"]
    assert master.value == '"python:3.12"' and master.label is not None
    assert master.label.kind == "template"
    assert master.label.text == (
        "from combinedMasterSpec.image, set by template job master, "
        f"projects/vision/templates/job.yaml:{line}"
    )
    worker = found[f"{JOB}.Worker.template.spec.containers[0].image"]
    assert worker.value == '"python:3.11"' and worker.label is not None
    assert worker.label.text.startswith("from combinedSpec.image")
    # Readable for a 3-replica job: each replica type once, its count a labelled value.
    assert found[f"{JOB}.Worker.replicas"].value == "3"
    assert found[f"{JOB}.Master.replicas"].value == "1"
    assert sum(path.endswith(".containers[0].image") for path in found) == 2
    assert page.manifests is not None and [o.kind for o in page.manifests.objects] == ["PyTorchJob"]


def test_refusals_are_marked_at_their_object_path(write_tree: WriteTree, preview: Preview) -> None:
    files = {"system/defaults.yaml": {"spec": {"priorityClass": "urgent"}}}  # the cluster has no such class
    page = explain_page(preview(write_tree(files), "job", project="vision"))
    assert page.manifests is not None and not page.runnable
    refusals = {r.object_path: r for r in page.manifests.refusals}
    at = f"{JOB}.Master.template.spec.priorityClassName"
    refused = refusals[at]
    assert refused.check == "mapping.priorityClass"
    assert refused.field == "combinedSpec.priorityClass"
    node = object_nodes(page)[at]
    assert node.value == '"urgent"' and node.label is not None and node.label.kind == "system"
    assert refused.anchor == node.id and node.refusals == [refused]
    assert any(
        line.startswith("refused (mapping.priorityClass): the cluster refuses") for line in node.details
    )
    html = render_page(page)
    parsed = assert_inert(html)
    links = [a["href"] for tag, a in parsed.tags if tag == "a" and a.get("href") == f"#{node.id}"]
    assert links and node.id in parsed.ids()
    assert 'class="flag issue">refused: mapping.priorityClass<' in html
    assert "1 refused)" in html  # the tab says so before it is opened
    # The same refusal is an issue of the composition, at the spec field that set the value.
    assert any(i.field == "priorityClass" and at in i.message for i in page.issues)


def test_the_not_representable_fields_are_listed_on_the_tab(write_tree: WriteTree, preview: Preview) -> None:
    files = {
        "system/defaults.yaml": {
            "spec": {"relatedUrls": [{"url": "https://wiki", "type": "docs"}], "createHomeDir": True}
        }
    }
    page = explain_page(preview(write_tree(files), "job", project="vision"))
    assert page.manifests is not None
    assert page.manifests.warnings == (
        "worker createHomeDir: not in the objects: Run:ai's controller creates the home folder for the user "
        "it runs as; no operator does",
        "worker relatedUrls: not in the objects: links shown by Run:ai's UI; nothing in the cluster reads "
        "them",
    )
    html = render_page(page)
    panel = Page(html[html.index('id="panel-manifests"') :])
    assert "Not in the objects" in panel.text
    assert page.manifests.warnings[1] in panel.text


def test_the_tabs_work_without_script(page: PageView) -> None:
    html = render_page(page, "../index.html")
    parsed = assert_inert(html)
    order = [
        (tag, a.get("id") or a.get("for") or "") for tag, a in parsed.tags if tag in ("input", "label", "div")
    ]
    radios = [(tag, a) for tag, a in parsed.tags if tag == "input" and a.get("type") == "radio"]
    assert [a["id"] for _, a in radios] == ["tab-spec", "tab-manifests"]
    assert {a["name"] for _, a in radios} == {"tab"} and "checked" in radios[0][1]
    assert "checked" not in radios[1][1]
    # Each radio, its label, then the panels, all siblings: the stylesheet shows the checked one's panel.
    ids = [name for _, name in order]
    assert (
        ids.index("tab-spec")
        < ids.index("tab-manifests")
        < ids.index("panel-spec")
        < ids.index("panel-manifests")
    )
    assert "#tab-manifests:checked ~ #panel-manifests" in html and ".panel { display: none;" in html
    labels = {a.get("for") for tag, a in parsed.tags if tag == "label"}
    assert {"tab-spec", "tab-manifests"} <= labels
    # Values of the manifests are focusable and described, like the spec's.
    found = object_nodes(page)
    spans = {
        a.get("aria-describedby"): a
        for tag, a in parsed.tags
        if tag == "span" and "val" in (a.get("class") or "").split()
    }
    image = found[f"{JOB}.Worker.template.spec.containers[0].image"]
    assert spans[f"{image.id}-p"]["tabindex"] == "0"
    assert "set by environment asset torch" in (spans[f"{image.id}-p"]["title"] or "")


def test_hostile_values_stay_text_in_the_manifests(write_tree: WriteTree, preview: Preview) -> None:
    files = hostile_files()
    project = files[f"projects/{PROJECT}/defaults.yaml"]["spec"]
    project["labels"] = [{"name": "y", "value": "plain"}]  # labelled by a project whose name is markup
    project["priorityClass"] = "urgent"  # refused: the cluster has no such class
    page = explain_page(preview(write_tree(files), "job", project=PROJECT))
    found = object_nodes(page)
    # A Kubernetes label value holding markup, a label (provenance) holding markup, a namespace made of it.
    value = found["PyTorchJob.metadata.labels.x"]
    assert value.value is not None and SCRIPT in value.value
    label = found["PyTorchJob.metadata.labels.y"].label
    assert (
        label is not None
        and f"set by project {PROJECT} defaults, projects/{PROJECT}/defaults.yaml:" in label.text
    )
    namespace = found["PyTorchJob.metadata.namespace"]
    assert namespace.value is not None and "runai-<img src=x onerror=alert(4)>" in namespace.value
    assert page.manifests is not None and page.manifests.refusals
    html = render_page(page, "../index.html")
    parsed = assert_inert(html)
    assert SCRIPT not in html and PROJECT not in html and 'onmouseover="alert' not in html
    panel = html[html.index('id="panel-manifests"') :]
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in panel
    assert "&lt;img src=x onerror=alert(4)&gt;" in panel
    readable = parsed.values()
    assert label.text in readable and f"PyTorchJob.metadata.labels.x: {label_text(value)}" in readable


def label_text(node: ObjectNode) -> str:
    return "; ".join(node.details)


def test_a_refusal_of_a_value_the_objects_lack_marks_its_nearest_parent() -> None:
    manifests = Manifests(({"kind": "JAXJob", "metadata": {"name": "x", "labels": {"a.b/c": "d"}}},), ({},))
    issues = [
        RunnableIssue("worker", (), "no spec", object_path="JAXJob.spec", check="schema.required"),
        RunnableIssue("worker", (), "bad", object_path="JAXJob.metadata.labels.a.b/c", check="k.label"),
        RunnableIssue("worker", (), "deep", object_path="JAXJob.metadata.labels.a.b/c.x[0]", check="k.deep"),
        RunnableIssue("worker", (), "elsewhere", object_path="TFJob.spec", check="schema.required"),
    ]
    view = manifests_view(
        manifests, issues, (), lambda source: ValueLabel("none", "no layer", "-"), repr, lambda i: ""
    )
    found = {n.path: n for obj in view.objects for top in obj.nodes for n in top.walk()}
    anchors = [r.anchor for r in view.refusals]
    assert anchors == [
        None,  # no node is a prefix of ``JAXJob.spec`` but the object itself, which has no node
        found["JAXJob.metadata.labels.a.b/c"].id,  # a key with dots is one step
        found["JAXJob.metadata.labels.a.b/c"].id,
        None,
    ]
