"""The one plan-guided walk of a spec (template_engine/walk.py): how places are named, read and rewritten."""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

from template_engine.merge.plan import SPEC_PLAN, PlanNode
from template_engine.models.markers import MergeKey
from template_engine.paths import Match, Path, format_path
from template_engine.walk import Step, items, rebuild, steps

#: A small plan with one of each kind of place: keyed lists (one with a fallback key, one nested), a plain
#: list, and a mapping replaced whole.
PLAN = PlanNode(
    children={
        "env": PlanNode(key=MergeKey("name")),
        "ports": PlanNode(key=MergeKey("name", "container")),
        "args": PlanNode(),
        "affinity": PlanNode(whole=True),
        "storage": PlanNode(children={"nfs": PlanNode(key=MergeKey("name"))}),
    }
)

SPEC: dict[str, Any] = {
    "image": "python:3.11",
    "env": [{"name": "HOME", "value": "/root"}, {"name": "USER", "value": "{{ user }}"}],
    "args": ["--epochs", "3"],
    "affinity": {"zone": "a", "rack": "r1"},
    "storage": {"nfs": [{"name": "data", "server": "nfs.local"}]},
    "compute": {"gpu": 2},
}


def shown(walk: Any) -> list[tuple[str, Any, bool]]:
    return [(format_path(step.path), step.value, step.item) for step in walk]


# -- items: the naming rule ---------------------------------------------------------------------------------


def test_items_of_a_keyed_list_are_named_by_their_key() -> None:
    values = [{"name": "HOME"}, {"name": "USER"}]
    assert list(items(values, PLAN.child("env"))) == [
        (Match("name", "HOME"), values[0]),
        (Match("name", "USER"), values[1]),
    ]


def test_an_item_without_its_key_is_named_by_the_fallback_or_else_its_position() -> None:
    values: list[Any] = [{"name": "web"}, {"container": 8080}, {"protocol": "tcp"}, "not a mapping"]
    assert [segment for segment, _ in items(values, PLAN.child("ports"))] == [
        Match("name", "web"),
        Match("container", 8080),
        2,
        3,
    ]


def test_items_of_a_list_that_is_not_keyed_are_named_by_position() -> None:
    assert list(items(["a", {"name": "x"}], PLAN.child("args"))) == [(0, "a"), (1, {"name": "x"})]


def test_items_reads_any_mapping() -> None:
    item = MappingProxyType({"name": "HOME"})
    assert list(items([item], PLAN.child("env"))) == [(Match("name", "HOME"), item)]


# -- steps: the readers' walk -------------------------------------------------------------------------------


def test_steps_name_every_place_in_document_order() -> None:
    assert shown(steps(SPEC, PLAN)) == [
        ("image", "python:3.11", False),
        ("env[name=HOME]", SPEC["env"][0], True),
        ("env[name=HOME].name", "HOME", False),
        ("env[name=HOME].value", "/root", False),
        ("env[name=USER]", SPEC["env"][1], True),
        ("env[name=USER].name", "USER", False),
        ("env[name=USER].value", "{{ user }}", False),
        # a plain list and a mapping replaced whole are single leaves
        ("args", ["--epochs", "3"], False),
        ("affinity", {"zone": "a", "rack": "r1"}, False),
        ("storage.nfs[name=data]", SPEC["storage"]["nfs"][0], True),
        ("storage.nfs[name=data].name", "data", False),
        ("storage.nfs[name=data].server", "nfs.local", False),
        ("compute.gpu", 2, False),
    ]


def test_a_step_carries_the_plan_node_of_its_place() -> None:
    by_path = {step.path: step for step in steps(SPEC, PLAN)}
    item = by_path[("env", Match("name", "HOME"))]
    assert isinstance(item, Step)
    assert item.node is PLAN.child("env")
    assert by_path[("affinity",)].node.whole
    assert by_path[("image",)].node.key is None and not by_path[("image",)].node.whole


def test_sorted_steps_visit_mapping_fields_by_name_and_keep_list_order() -> None:
    spec = {"zeta": 1, "env": [{"value": "v", "name": "B"}, {"name": "A"}], "alpha": {"y": 1, "x": 2}}
    assert [format_path(s.path) for s in steps(spec, PLAN, sort=True)] == [
        "alpha.x",
        "alpha.y",
        "env[name=B]",
        "env[name=B].name",
        "env[name=B].value",
        "env[name=A]",
        "env[name=A].name",
        "zeta",
    ]


def test_by_position_names_keyed_items_as_a_line_map_does() -> None:
    paths = [s.path for s in steps(SPEC, PLAN, by_position=True) if s.item]
    assert paths == [("env", 0), ("env", 1), ("storage", "nfs", 0)]


def test_without_leaves_only_keyed_items_are_steps() -> None:
    walk = steps(SPEC, PLAN, leaves=False)
    assert [(s.path, s.item) for s in walk] == [
        (("env", Match("name", "HOME")), True),
        (("env", Match("name", "USER")), True),
        (("storage", "nfs", Match("name", "data")), True),
    ]


def test_skip_leaves_out_the_fields_of_the_item_just_returned() -> None:
    walk = steps(SPEC, PLAN)
    seen: list[str] = []
    for step in walk:
        seen.append(format_path(step.path))
        if step.item and step.path[0] == "env":
            walk.skip()
    assert seen == [
        "image",
        "env[name=HOME]",
        "env[name=USER]",
        "args",
        "affinity",
        "storage.nfs[name=data]",
        "storage.nfs[name=data].name",
        "storage.nfs[name=data].server",
        "compute.gpu",
    ]


def test_skip_is_forgotten_after_the_next_item() -> None:
    walk = steps({"env": [{"name": "A", "value": 1}, {"name": "B", "value": 2}]}, PLAN)
    first = next(walk)
    walk.skip()
    assert first.path == ("env", Match("name", "A"))
    assert [format_path(s.path) for s in walk] == ["env[name=B]", "env[name=B].name", "env[name=B].value"]


def test_steps_start_below_a_given_path() -> None:
    walk = steps(SPEC["storage"], PLAN.child("storage"), ("storage",))
    assert [format_path(s.path) for s in walk if s.item] == ["storage.nfs[name=data]"]


def test_empty_containers_and_unkeyed_items() -> None:
    spec = {"env": [], "compute": {}, "args": [], "ports": [{"protocol": "tcp"}]}
    assert shown(steps(spec, PLAN)) == [
        ("args", [], False),
        ("ports[0]", {"protocol": "tcp"}, True),
        ("ports[0].protocol", "tcp", False),
    ]


def test_the_walk_follows_the_real_merge_plan() -> None:
    spec = {
        "environmentVariables": [{"name": "HOME", "value": "/root"}],
        "ports": [{"container": 8080}],
        "storage": {"pvc": [{"name": "ckpt", "path": "/ckpt"}]},
    }
    items_found = [format_path(s.path) for s in steps(spec, SPEC_PLAN, leaves=False)]
    assert items_found == [
        "environmentVariables[name=HOME]",
        "ports[container=8080]",
        "storage.pvc[name=ckpt]",
    ]


def test_steps_leave_the_spec_unchanged() -> None:
    before = copy.deepcopy(SPEC)
    list(steps(SPEC, PLAN, sort=True))
    assert before == SPEC


# -- rebuild: the writers' walk -----------------------------------------------------------------------------


def test_rebuild_without_hooks_is_a_deep_copy() -> None:
    out = rebuild(SPEC, PLAN)
    assert out == SPEC
    assert out is not SPEC and out["env"] is not SPEC["env"] and out["env"][0] is not SPEC["env"][0]
    assert out["affinity"] is not SPEC["affinity"]


def test_the_text_hook_sees_every_string_with_its_typed_path() -> None:
    seen: list[tuple[str, Path]] = []

    def text(value: str, path: Path) -> Any:
        seen.append((value, path))
        return value.upper()

    out = rebuild(SPEC, PLAN, text=text)
    assert out["env"][1] == {"name": "USER", "value": "{{ USER }}"}
    assert out["args"] == ["--EPOCHS", "3"]
    assert out["compute"] == {"gpu": 2}  # not a string: kept as is
    assert ("{{ user }}", ("env", Match("name", "USER"), "value")) in seen
    assert ("--epochs", ("args", 0)) in seen  # a plain list's items by position
    assert ("a", ("affinity", "zone")) in seen  # a value replaced whole is still copied through the hook
    assert ("nfs.local", ("storage", "nfs", Match("name", "data"), "server")) in seen
    assert SPEC["env"][1]["value"] == "{{ user }}"


def test_the_keyed_hook_is_called_after_each_keyed_list_with_segments_and_copies() -> None:
    calls: list[tuple[Path, PlanNode, list[Match | int], list[Any]]] = []

    def keyed(path: Path, node: PlanNode, segments: list[Match | int], copied: list[Any]) -> None:
        calls.append((path, node, list(segments), copied))

    spec = {"ports": [{"name": "web", "container": 80}, {"container": 8080}, {"protocol": "udp"}]}
    out = rebuild({**SPEC, **spec}, PLAN, keyed=keyed, text=lambda value, path: f"<{value}>")
    assert [(path, node) for path, node, _, _ in calls] == [
        (("env",), PLAN.child("env")),
        (("storage", "nfs"), PLAN.child("storage").child("nfs")),
        (("ports",), PLAN.child("ports")),
    ]
    _, _, segments, copied = calls[2]
    # the items' identities are read before the text hook rewrites them
    assert segments == [Match("name", "web"), Match("container", 8080), 2]
    assert copied is out["ports"]  # the copies, with the text hook applied
    assert copied[0] == {"name": "<web>", "container": 80}


def test_the_keyed_hook_may_reorder_the_copied_items() -> None:
    def by_key(path: Path, node: PlanNode, segments: list[Match | int], copied: list[Any]) -> None:
        copied.sort(key=lambda item: str(item.get("name")))

    out = rebuild({"env": [{"name": "b"}, {"name": "a"}]}, PLAN, keyed=by_key)
    assert out == {"env": [{"name": "a"}, {"name": "b"}]}


def test_prune_leaves_out_absent_and_empty_values_of_mappings_only() -> None:
    spec: dict[str, Any] = {
        "image": None,
        "compute": {},
        "env": [],
        "args": ["", None],
        "affinity": {"zone": None, "rack": "r1"},
        "storage": {"nfs": [{"name": "data", "options": {}, "server": None}]},
    }
    assert rebuild(spec, PLAN, prune=True) == {
        "args": ["", None],
        "affinity": {"rack": "r1"},
        "storage": {"nfs": [{"name": "data"}]},
    }


def test_prune_drops_a_mapping_emptied_by_pruning() -> None:
    assert rebuild({"compute": {"gpu": None}, "image": "x"}, PLAN, prune=True) == {"image": "x"}


def test_prune_applies_after_the_text_hook() -> None:
    out = rebuild(
        {"image": "drop", "command": "keep"}, PLAN, prune=True, text=lambda v, p: None if v == "drop" else v
    )
    assert out == {"command": "keep"}


def test_sort_orders_mapping_keys_and_keeps_list_order() -> None:
    spec = {"zeta": 1, "env": [{"value": "v", "name": "B"}, {"name": "A"}], "alpha": {"y": 1, "x": 2}}
    out = rebuild(spec, PLAN, sort=True)
    assert list(out) == ["alpha", "env", "zeta"]
    assert list(out["alpha"]) == ["x", "y"]
    assert [list(item) for item in out["env"]] == [["name", "value"], ["name"]]
    unsorted = rebuild(spec, PLAN)
    assert list(unsorted) == ["zeta", "env", "alpha"]


def test_rebuild_makes_plain_data_of_other_mappings_and_keeps_other_values() -> None:
    marker = object()
    spec = MappingProxyType({"compute": MappingProxyType({"gpu": 1.5}), "other": marker, "flag": True})
    out = rebuild(spec, PLAN)
    assert type(out) is dict and type(out["compute"]) is dict
    assert out == {"compute": {"gpu": 1.5}, "other": marker, "flag": True}
    assert out["other"] is marker


def test_items_at_names_the_mapping_items_of_a_list_by_their_key() -> None:
    from template_engine.merge.plan import SPEC_PLAN
    from template_engine.paths import Match
    from template_engine.walk import items_at

    spec = {
        "storage": {"nfs": [{"name": "a"}, "not an item", {"server": "s"}]},
        "tolerations": [{"key": "k"}],
    }
    assert list(items_at(spec, ("storage", "nfs"), SPEC_PLAN)) == [
        (("storage", "nfs", Match("name", "a")), {"name": "a"}),
        (("storage", "nfs", 2), {"server": "s"}),  # no key: its position
    ]
    assert [path for path, _ in items_at(spec, ("tolerations",), SPEC_PLAN)] == [("tolerations", 0)]
    assert list(items_at({"storage": 3}, ("storage", "nfs"), SPEC_PLAN)) == []


def test_keyed_path_names_a_keyed_item_by_its_identity_and_any_other_by_position() -> None:
    from template_engine.merge.plan import SPEC_PLAN
    from template_engine.paths import Match
    from template_engine.walk import keyed_path

    spec = {
        "environmentVariables": [{"name": "A", "value": "1"}, {"value": "2"}],
        "tolerations": [{"key": "k"}],
    }
    assert keyed_path(spec, ("environmentVariables", 0, "value"), SPEC_PLAN) == (
        "environmentVariables",
        Match("name", "A"),
        "value",
    )
    assert keyed_path(spec, ("environmentVariables", 1), SPEC_PLAN) == ("environmentVariables", 1)  # no key
    assert keyed_path(spec, ("environmentVariables", 7), SPEC_PLAN) == (
        "environmentVariables",
        7,
    )  # not there
    assert keyed_path(spec, ("tolerations", 0, "key"), SPEC_PLAN) == ("tolerations", 0, "key")  # not keyed
