"""What the API server checks in pod templates and metadata (``template_engine.cluster.kube``).

The name tables are Kubernetes' own test cases: kubernetes/apimachinery ``pkg/api/validate/content/
dns_test.go`` (``TestIsDNS1123Label``, ``TestIsDNS1123Subdomain``), ``content/kube_test.go``
(``TestIsLabelKey``, ``TestIsLabelValue``), ``pkg/util/validation/validation_test.go``
(``TestIsDNS1035Label``, ``TestIsValidPortName``, ``TestIsRelaxedEnvVarName``) and
``pkg/api/resource/quantity_test.go`` (``TestQuantityParse``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.cluster import kube
from template_engine.cluster.kube import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    dns1035_label,
    dns1123_label,
    dns1123_subdomain,
    env_var_name,
    label_value,
    metadata_problems,
    pod_template_problems,
    port_name,
    qualified_name,
    quantity,
)

Predicate = Callable[[str], "str | None"]

NAMES: list[tuple[Predicate, list[str], list[str]]] = [
    (
        dns1123_label,
        ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2", "a" * 63],
        [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a.b",
            "1.",
            ".1",
            "1.2",
            " ",
            "a ",
            " a",
            "a b",
            "1 2",
            "a" * 64,
            "a\n",
        ],
    ),
    (
        dns1123_subdomain,
        [
            "a",
            "ab",
            "a-1",
            "a--1--2--b",
            "0",
            "1-a",
            "a.a",
            "a--1--2--b.a",
            "a.1",
            "0.a",
            "0.1",
            "1--a--b--2.1",
            "a.b.c.d.e",
            "aa.bb.cc.dd.ee",
            "1.2.3.4.5",
            "11.22.33.44.55",
            "a" * 253,
        ],
        [
            "",
            "A",
            "aBc",
            "1-A",
            "-",
            "a-",
            "-a",
            "_",
            "a_b",
            ".",
            "a.",
            ".a",
            "a..b",
            "1..2",
            " ",
            "a b",
            "A.a",
            "aB.a",
            "ab.A",
            "0.A",
            "A.B.C.D.E",
            "a.B.c.d.e",
            "a@b",
            "a,b",
            "a;b",
            "a:b",
            "a%b",
            "a?b",
            "a$b",
            "a" * 254,
        ],
    ),
    (
        dns1035_label,
        ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "a" * 63],
        [
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            "",
            "A",
            "aBc",
            "-",
            "a-",
            "-a",
            "a_b",
            "a.b",
            " ",
            "a b",
            "a" * 64,
        ],
    ),
    (
        qualified_name,
        [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now.with.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            "a" * 63,
            "a" * 253 + "/" + "b" * 63,
        ],
        [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            "a" * 64,
            "a" * 254 + "/abc",
        ],
    ),
    (
        label_value,
        ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, ""],
        [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes\\are\\bad",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
            "a" * 64,
        ],
    ),
    (
        port_name,
        ["telnet", "re-mail-ck", "pop3", "a", "a-1", "1-a", "a-1-b-2-c", "1-a-2-b-3"],
        [
            "longerthan15characters",
            "",
            "a" * 16,
            "12345",
            "1-2-3-4",
            "-begin",
            "end-",
            "two--hyphens",
            "whois++",
        ],
    ),
    (
        env_var_name,
        [
            "-",
            ":",
            "_",
            "+a",
            ">a",
            "<a",
            "a.",
            "a..",
            "*a",
            "%a",
            "?a",
            "a:a",
            "a_a",
            "aAz",
            "~a",
            "|a",
            "a0a",
            "a9",
            "/a",
            "a ",
            "#a",
            "0a",
            "0 a",
            "'a",
            "(a",
            "@a",
        ],
        ["", "=", "a=", "1=a", "a=b", "#%=&&", chr(1) + "abc", chr(130) + "abc", "Ç ç", "Ä ä", "Ñ ñ", "Ø ø"],
    ),
    (
        quantity,
        [
            "0",
            "0n",
            "0Ki",
            "0Ti",
            "1",
            "1Ki",
            "7Mi",
            "3Ei",
            "100Ti",
            "5n",
            "4u",
            "3m",
            "50k",
            "7M",
            "2P",
            "1E",
            "1E-3",
            "1e3",
            "1E6",
            "1e18",
            "-1",
            "+1",
            "1.",
            ".5",
            "1.5Gi",
            "1.G",
            "0.5",
        ],
        ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ", "1e"],
    ),
]


@pytest.mark.parametrize(
    ("predicate", "text", "valid"),
    [(p, text, True) for p, good, _ in NAMES for text in good]
    + [(p, text, False) for p, _, bad in NAMES for text in bad],
    ids=lambda value: repr(value)[:40] if isinstance(value, str) else getattr(value, "__name__", None),
)
def test_names_follow_kubernetes_test_cases(predicate: Predicate, text: str, valid: bool) -> None:
    message = predicate(text)
    assert (message is None) is valid
    if message is not None:
        assert message and message[0].islower()


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_predicates_never_raise(text: str) -> None:
    for predicate, _, _ in NAMES:
        result = predicate(text)
        assert result is None or isinstance(result, str)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789+-.eEinumkKMGTP", max_size=30))
def test_quantity_grammar_never_raises(text: str) -> None:
    assert quantity(text) is None or isinstance(quantity(text), str)


def test_quantity_text_oddities_go_accepts() -> None:
    """``parseQuantityString`` reads ``"."``, ``"+"`` and a bare suffix as zero; the exponent is an int64."""
    assert [quantity(t) for t in (".", "+", "Mi", "e3")] == [None] * 4
    assert quantity("1e9223372036854775808") is not None


# ---------------------------------------------------------------------------------------------------------
# Metadata

ROOT = ("metadata",)


def rules(problems: list[Any]) -> list[tuple[tuple[str | int, ...], str]]:
    return [(p.path, p.rule) for p in problems]


def test_valid_metadata_has_no_problem() -> None:
    metadata = {
        "name": "train.v1",
        "namespace": "runai-team",
        "labels": {"kai.scheduler/queue": "team", "app": ""},
        "annotations": {"Example.COM/Note": "x"},
    }
    assert metadata_problems("PyTorchJob", ROOT, metadata) == []


@pytest.mark.parametrize(
    ("metadata", "path", "rule"),
    [
        ({"name": "Train"}, ("metadata", "name"), "kubernetes.dns1123Subdomain"),
        ({}, ("metadata", "name"), "kubernetes.required"),
        ({"generateName": "Job-"}, ("metadata", "generateName"), "kubernetes.dns1123Subdomain"),
        ({"name": "a", "namespace": "a.b"}, ("metadata", "namespace"), "kubernetes.dns1123Label"),
        ({"name": "a", "labels": {"a/b/c": "x"}}, ("metadata", "labels", "a/b/c"), "kubernetes.labelKey"),
        ({"name": "a", "labels": {"k": "-x"}}, ("metadata", "labels", "k"), "kubernetes.labelValue"),
        (
            {"name": "a", "annotations": {"_a": ""}},
            ("metadata", "annotations", "_a"),
            "kubernetes.annotationKey",
        ),
        (
            {"name": "a", "annotations": {"big": "x" * TOTAL_ANNOTATION_SIZE_LIMIT}},
            ("metadata", "annotations"),
            "kubernetes.annotationsSize",
        ),
    ],
)
def test_metadata_rule_broken_once(metadata: dict[str, Any], path: tuple[str, ...], rule: str) -> None:
    assert rules(metadata_problems("PyTorchJob", ROOT, metadata)) == [(path, rule)]


def test_metadata_name_predicate_is_a_parameter() -> None:
    assert metadata_problems("PyTorchJob", ROOT, {"name": "1job"}) == []
    found = metadata_problems("PyTorchJob", ROOT, {"name": "1job"}, name=dns1035_label)
    assert rules(found) == [(("metadata", "name"), "kubernetes.dns1035Label")]
    assert "PyTorchJob.metadata.name" in str(found[0])


def test_generated_name_may_end_with_a_dash() -> None:
    assert metadata_problems("PyTorchJob", ROOT, {"generateName": "job-"}) == []


# ---------------------------------------------------------------------------------------------------------
# Pod templates

AT = ("spec", "pytorchReplicaSpecs", "Worker", "template")
SPEC = (*AT, "spec")
C0 = (*SPEC, "containers", 0)


def template() -> dict[str, Any]:
    """A template that passes every check, touching each of them."""
    return {
        "metadata": {"labels": {"app": "train"}, "annotations": {"gpu-fraction": "0.5"}},
        "spec": {
            "restartPolicy": "OnFailure",
            "schedulerName": "kai-scheduler",
            "priorityClassName": "train",
            "nodeSelector": {"node-role.kubernetes.io/gpu": "true"},
            "imagePullSecrets": [{"name": "Not_A_Name"}],
            "terminationGracePeriodSeconds": 30,
            "securityContext": {"runAsUser": 1000, "fsGroup": 100, "supplementalGroups": [5]},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {
                    "key": "pool",
                    "operator": "Equal",
                    "value": "a",
                    "effect": "NoExecute",
                    "tolerationSeconds": 5,
                },
                {"operator": "Exists"},
            ],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 0o644}},
                {"name": "host", "hostPath": {"path": "/mnt/data", "type": "Directory"}},
                {
                    "name": "key",
                    "secret": {"secretName": "key", "items": [{"key": "a", "path": "a", "mode": 0o400}]},
                },
                {"name": "scratch", "emptyDir": {"sizeLimit": 10**9}},
                {"name": "claim", "persistentVolumeClaim": {"claimName": "claim"}},
            ],
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [
                {
                    "name": "pytorch",
                    "image": "pytorch:2",
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [{"name": "master", "containerPort": 23456, "protocol": "TCP"}],
                    "env": [
                        {"name": "MY.VAR-1", "value": "x"},
                        {"name": "S", "valueFrom": {"secretKeyRef": {"name": "key", "key": "a"}}},
                    ],
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data"},
                        {"name": "dshm", "mountPath": "/dev/shm"},
                    ],
                    "resources": {
                        "requests": {"cpu": "500m", "memory": 1073741824, "nvidia.com/gpu": 2},
                        "limits": {"cpu": 1, "memory": "1Gi", "nvidia.com/gpu": "2"},
                    },
                    "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": False},
                },
                {
                    "name": "sidecar",
                    "image": "sidecar:1",
                    "ports": [{"name": "master", "containerPort": 80}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                },
            ],
        },
    }


def test_the_valid_template_has_no_problem() -> None:
    given_template = template()
    kept = copy.deepcopy(given_template)
    assert pod_template_problems("PyTorchJob", AT, given_template) == []
    assert given_template == kept


def _set(doc: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    node: Any = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


def _spec(*path: str | int) -> tuple[str | int, ...]:
    return ("spec", *path)


def _c0(*path: str | int) -> tuple[str | int, ...]:
    return ("spec", "containers", 0, *path)


# (where to write in the template, the value, the path of the problem from the object root, the rule)
BROKEN: list[tuple[tuple[str | int, ...], Any, tuple[str | int, ...], str]] = [
    (("metadata", "labels", "app"), "-x", (*AT, "metadata", "labels", "app"), "kubernetes.labelValue"),
    (
        ("metadata", "annotations"),
        {"a b": ""},
        (*AT, "metadata", "annotations", "a b"),
        "kubernetes.annotationKey",
    ),
    (_c0("name"), "PyTorch", (*C0, "name"), "kubernetes.dns1123Label"),
    (_c0("name"), "", (*C0, "name"), "kubernetes.required"),
    (
        ("spec", "containers", 1, "name"),
        "pytorch",
        (*SPEC, "containers", 1, "name"),
        "kubernetes.uniqueContainerName",
    ),
    (
        ("spec", "initContainers", 0, "name"),
        "sidecar",
        (*SPEC, "initContainers", 0, "name"),
        "kubernetes.uniqueContainerName",
    ),
    (_c0("image"), "", (*C0, "image"), "kubernetes.required"),
    (_c0("imagePullPolicy"), "Sometimes", (*C0, "imagePullPolicy"), "kubernetes.imagePullPolicy"),
    (_c0("ports", 0, "containerPort"), 70000, (*C0, "ports", 0, "containerPort"), "kubernetes.portNumber"),
    (_c0("ports", 0, "containerPort"), 0, (*C0, "ports", 0, "containerPort"), "kubernetes.required"),
    (_c0("ports", 0, "hostPort"), -1, (*C0, "ports", 0, "hostPort"), "kubernetes.portNumber"),
    (_c0("ports", 0, "name"), "two--hyphens", (*C0, "ports", 0, "name"), "kubernetes.portName"),
    (
        _c0("ports"),
        [{"name": "a", "containerPort": 1}, {"name": "a", "containerPort": 2}],
        (*C0, "ports", 1, "name"),
        "kubernetes.uniquePortName",
    ),
    (_c0("ports", 0, "protocol"), "HTTP", (*C0, "ports", 0, "protocol"), "kubernetes.protocol"),
    (_c0("env", 0, "name"), "A=B", (*C0, "env", 0, "name"), "kubernetes.envVarName"),
    (
        _c0("env", 1, "valueFrom", "secretKeyRef", "name"),
        "Key",
        (*C0, "env", 1, "valueFrom", "secretKeyRef", "name"),
        "kubernetes.dns1123Subdomain",
    ),
    (_c0("volumeMounts", 0, "name"), "nope", (*C0, "volumeMounts", 0, "name"), "kubernetes.mountVolume"),
    (
        _c0("volumeMounts", 1, "mountPath"),
        "/data",
        (*C0, "volumeMounts", 1, "mountPath"),
        "kubernetes.uniqueMountPath",
    ),
    (_c0("volumeMounts", 1, "mountPath"), "", (*C0, "volumeMounts", 1, "mountPath"), "kubernetes.required"),
    (_c0("resources", "limits", "cpu"), "1 core", (*C0, "resources", "limits", "cpu"), "kubernetes.quantity"),
    (
        _c0("resources", "requests", "cpu"),
        "-1",
        (*C0, "resources", "requests", "cpu"),
        "kubernetes.nonNegativeQuantity",
    ),
    (
        _c0("resources", "requests", "cpu"),
        "2",
        (*C0, "resources", "requests", "cpu"),
        "kubernetes.requestsWithinLimits",
    ),
    (_c0("resources", "limits", "gpu"), "1", (*C0, "resources", "limits", "gpu"), "kubernetes.resourceName"),
    (
        _c0("resources"),
        {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}},
        (*C0, "resources", "requests", "nvidia.com/gpu"),
        "kubernetes.requestsEqualLimits",
    ),
    (
        _c0("resources"),
        {"requests": {"nvidia.com/gpu": 1}},
        (*C0, "resources", "limits"),
        "kubernetes.limitRequired",
    ),
    (
        _c0("resources"),
        {"limits": {"nvidia.com/gpu": "0.5"}},
        (*C0, "resources", "limits", "nvidia.com/gpu"),
        "kubernetes.integerResource",
    ),
    (
        _c0("securityContext", "runAsUser"),
        -1,
        (*C0, "securityContext", "runAsUser"),
        "kubernetes.userOrGroupId",
    ),
    (_c0("securityContext", "privileged"), True, (*C0, "securityContext"), "kubernetes.privilegeEscalation"),
    (
        _c0("securityContext", "capabilities"),
        {"add": ["CAP_SYS_ADMIN"]},
        (*C0, "securityContext"),
        "kubernetes.privilegeEscalation",
    ),
    (
        _spec("securityContext", "fsGroup"),
        2**31,
        (*SPEC, "securityContext", "fsGroup"),
        "kubernetes.userOrGroupId",
    ),
    (_spec("volumes", 3, "name"), "Host", (*SPEC, "volumes", 3, "name"), "kubernetes.dns1123Label"),
    (_spec("volumes", 2, "name"), "dshm", (*SPEC, "volumes", 2, "name"), "kubernetes.uniqueVolumeName"),
    (_spec("volumes", 2), {"name": "cfg"}, (*SPEC, "volumes", 2), "kubernetes.volumeSource"),
    (
        _spec("volumes", 2, "secret"),
        {"secretName": "s"},
        (*SPEC, "volumes", 2, "configMap"),
        "kubernetes.volumeSource",
    ),
    (
        _spec("volumes", 2, "configMap", "defaultMode"),
        0o1000,
        (*SPEC, "volumes", 2, "configMap", "defaultMode"),
        "kubernetes.fileMode",
    ),
    (
        _spec("volumes", 4, "secret", "items", 0, "mode"),
        -1,
        (*SPEC, "volumes", 4, "secret", "items", 0, "mode"),
        "kubernetes.fileMode",
    ),
    (
        _spec("volumes", 2, "configMap", "name"),
        "",
        (*SPEC, "volumes", 2, "configMap", "name"),
        "kubernetes.required",
    ),
    (_spec("volumes", 4, "secret"), {}, (*SPEC, "volumes", 4, "secret", "secretName"), "kubernetes.required"),
    (
        _spec("volumes", 3, "hostPath", "path"),
        "/mnt/../etc",
        (*SPEC, "volumes", 3, "hostPath", "path"),
        "kubernetes.pathBacksteps",
    ),
    (
        _spec("volumes", 3, "hostPath", "path"),
        "",
        (*SPEC, "volumes", 3, "hostPath", "path"),
        "kubernetes.required",
    ),
    (
        _spec("volumes", 3, "hostPath", "type"),
        "Folder",
        (*SPEC, "volumes", 3, "hostPath", "type"),
        "kubernetes.hostPathType",
    ),
    (
        _spec("volumes", 6, "persistentVolumeClaim", "claimName"),
        "",
        (*SPEC, "volumes", 6, "persistentVolumeClaim", "claimName"),
        "kubernetes.required",
    ),
    (
        _spec("volumes", 5, "emptyDir", "sizeLimit"),
        "1Gb",
        (*SPEC, "volumes", 5, "emptyDir", "sizeLimit"),
        "kubernetes.quantity",
    ),
    (_spec("nodeSelector"), {"gpu": "a b"}, (*SPEC, "nodeSelector", "gpu"), "kubernetes.labelValue"),
    (_spec("tolerations", 0, "value"), "x", (*SPEC, "tolerations", 0, "value"), "kubernetes.tolerationValue"),
    (
        _spec("tolerations", 0, "effect"),
        "Never",
        (*SPEC, "tolerations", 0, "effect"),
        "kubernetes.taintEffect",
    ),
    (
        _spec("tolerations", 0, "operator"),
        "In",
        (*SPEC, "tolerations", 0, "operator"),
        "kubernetes.tolerationOperator",
    ),
    (
        _spec("tolerations", 1, "effect"),
        "NoSchedule",
        (*SPEC, "tolerations", 1, "effect"),
        "kubernetes.tolerationSeconds",
    ),
    (_spec("tolerations", 1, "value"), "a/b", (*SPEC, "tolerations", 1, "value"), "kubernetes.labelValue"),
    (_spec("tolerations", 1, "key"), "a/b/c", (*SPEC, "tolerations", 1, "key"), "kubernetes.labelKey"),
    (
        _spec("tolerations", 2, "operator"),
        "Equal",
        (*SPEC, "tolerations", 2, "operator"),
        "kubernetes.tolerationOperator",
    ),
    (_spec("priorityClassName"), "High", (*SPEC, "priorityClassName"), "kubernetes.dns1123Subdomain"),
    (_spec("restartPolicy"), "Sometimes", (*SPEC, "restartPolicy"), "kubernetes.restartPolicy"),
    (_spec("activeDeadlineSeconds"), 0, (*SPEC, "activeDeadlineSeconds"), "kubernetes.activeDeadlineSeconds"),
]


@pytest.mark.parametrize(
    ("where", "value", "path", "rule"), BROKEN, ids=[f"{r}@{p[-1]}" for _, _, p, r in BROKEN]
)
def test_each_rule_broken_once(
    where: tuple[str | int, ...], value: Any, path: tuple[str | int, ...], rule: str
) -> None:
    broken = template()
    _set(broken, where, value)
    assert rules(pod_template_problems("PyTorchJob", AT, broken)) == [(path, rule)]


def test_a_mount_of_a_refused_volume_names_no_volume() -> None:
    """``ValidateVolumes`` keeps only the volumes without problems; mounting another one is refused too
    (here by both containers, which mount ``data``)."""
    broken = template()
    broken["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = ""
    assert rules(pod_template_problems("PyTorchJob", AT, broken)) == [
        ((*SPEC, "volumes", 0, "persistentVolumeClaim", "claimName"), "kubernetes.required"),
        ((*C0, "volumeMounts", 0, "name"), "kubernetes.mountVolume"),
        ((*SPEC, "containers", 1, "volumeMounts", 0, "name"), "kubernetes.mountVolume"),
    ]


def test_what_kubernetes_does_not_check_is_not_checked() -> None:
    """Read in ``ValidatePodSpec``: no rule on ``schedulerName``, ``imagePullSecrets`` names, the sign of
    ``terminationGracePeriodSeconds``; a port name may repeat in another container; a GPU count of 0.9999
    rounds up to a whole milli-count (``MilliValue``) and passes."""
    odd = template()
    odd["spec"]["schedulerName"] = "Not A Scheduler"
    odd["spec"]["terminationGracePeriodSeconds"] = -5
    odd["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "0.9999"}}
    assert pod_template_problems("PyTorchJob", AT, odd) == []


ODD_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(ODD_VALUES, st.sampled_from([(), ("spec",), ("spec", "containers", 0), ("spec", "volumes", 0)]))
def test_odd_input_never_raises(value: Any, where: tuple[str | int, ...]) -> None:
    doc = template()
    if where:
        _set(doc, where, value)
    else:
        doc = value if isinstance(value, dict) else {"spec": value}
    found = pod_template_problems("PyTorchJob", AT, doc)
    assert all(p.rule.startswith("kubernetes.") for p in found)
    assert isinstance(kube.metadata_problems("X", ROOT, doc), list)
