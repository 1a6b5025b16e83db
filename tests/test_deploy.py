"""The deployment under ``deploy/``: the container image definition and the Kubernetes manifests.

No cluster and no container engine run here, so what can be checked without them is:

- every manifest of ``deploy/kubernetes/`` is valid by Kubernetes' own schemas (kubernetes-validate, strict:
  an unknown field is an error, at :data:`~template_engine.cluster.schemas.KUBERNETES_VERSION`, the version
  the cluster step pins), and a broken copy is not;
- the objects agree with each other: the probes' paths and ports, the Service's target port, the Secrets'
  keys, the selectors, the images, the kustomization's list of files;
- every command they (and the Containerfile) run is a real command of the CLI with real options; every
  file the Containerfile copies exists.

What the image build itself needs from the checkout is tested by ``tests/test_deploy_build.py``.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Any

import click
import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner
from deploy_helpers import CONTAINERFILE, DEPLOY, REPO, containerfile_instructions

from template_engine._version import VERSION
from template_engine.cli import main
from template_engine.cluster.schemas import KUBERNETES_VERSION

KUBE = DEPLOY / "kubernetes"

#: Commands and settings the manifests use that other parts of issue 22 add (``db upgrade``, the settings by
#: environment variable). Each must be absent from the CLI today, so that the test fails, and says to remove
#: it from here, as soon as it exists: from then on it is checked like the rest.
NOT_YET_IN_CLI_COMMANDS: frozenset[tuple[str, ...]] = frozenset()

Obj = dict[str, Any]


# -- reading the folder --------------------------------------------------------------------------------------


@cache
def _documents() -> tuple[tuple[str, int, Obj], ...]:
    """``(file, index in file, object)`` of every manifest, the kustomization left out."""
    found: list[tuple[str, int, Obj]] = []
    for path in sorted(KUBE.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for index, doc in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            found.append((path.name, index, doc))
    return tuple(found)


def _objects(kind: str) -> list[Obj]:
    return [copy.deepcopy(obj) for _, _, obj in _documents() if obj["kind"] == kind]


def _one(kind: str) -> Obj:
    (obj,) = _objects(kind)
    return obj


def _kustomization() -> Obj:
    data: Obj = yaml.safe_load((KUBE / "kustomization.yaml").read_text(encoding="utf-8"))
    return data


def _pod_spec(obj: Obj) -> Obj:
    spec: Obj = obj["spec"]["template"]["spec"]
    return spec


def _container(obj: Obj) -> Obj:
    container: Obj
    (container,) = _pod_spec(obj)["containers"]
    return container


def _workloads() -> list[Obj]:
    return [_one("Deployment"), _one("Job")]


def kubernetes_error(obj: Mapping[str, Any]) -> str | None:
    """kubernetes-validate's error for one object (strict, at the pinned Kubernetes version), or ``None``."""
    try:
        kubernetes_validate.validate(copy.deepcopy(dict(obj)), KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = ".".join(str(step) for step in error.path)
        return f"{obj.get('kind')} at {where or '(top)'}: {error.message}"
    return None


# -- every manifest is valid, and the check can fail ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "index", "obj"), _documents(), ids=[f"{n}[{i}]" for n, i, _ in _documents()]
)
def test_every_manifest_is_valid_by_kubernetes_schemas(name: str, index: int, obj: Obj) -> None:
    assert kubernetes_error(obj) is None


def test_the_folder_holds_every_kind_the_deployment_needs() -> None:
    kinds = sorted(obj["kind"] for _, _, obj in _documents())
    assert kinds == ["Deployment", "Job", "PodDisruptionBudget", "Secret", "Secret", "Service"]


def _misspelled_probe_field(obj: Obj) -> None:
    probe = _container(obj)["readinessProbe"]["httpGet"]
    probe["pth"] = probe.pop("path")


def _replicas_as_text(obj: Obj) -> None:
    obj["spec"]["replicas"] = "three"


def _env_without_name(obj: Obj) -> None:
    del _container(obj)["env"][0]["name"]


@pytest.mark.parametrize(
    ("break_it", "expected"),
    [
        (_misspelled_probe_field, ("readinessProbe", "'pth'")),
        (_replicas_as_text, ("spec.replicas", "'three'")),
        (_env_without_name, ("env.0", "'name' is a required property")),
    ],
    ids=["unknown field", "wrong type", "missing required field"],
)
def test_a_broken_deployment_is_refused_with_the_field_and_the_reason(
    break_it: Any, expected: tuple[str, str]
) -> None:
    broken = _one("Deployment")
    break_it(broken)
    error = kubernetes_error(broken)
    assert error is not None, "kubernetes-validate accepted a broken Deployment"
    where, what = expected
    assert where in error and what in error, error


# -- the objects agree with each other -----------------------------------------------------------------------


def _port_number(container: Obj, port: int | str) -> int:
    """A probe's or Service's port, by number or by the container port's name."""
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p.get("name") == port]
    assert isinstance(number, int)
    return number


def _flag(args: Sequence[str], name: str) -> str:
    return args[list(args).index(name) + 1]


def test_the_probes_are_ready_and_health_on_the_served_port() -> None:
    deployment = _one("Deployment")
    container = _container(deployment)
    (port,) = [p["containerPort"] for p in container["ports"]]
    readiness = container["readinessProbe"]["httpGet"]
    liveness = container["livenessProbe"]["httpGet"]
    assert readiness["path"] == "/ready"
    assert liveness["path"] == "/health"
    assert _port_number(container, readiness["port"]) == port
    assert _port_number(container, liveness["port"]) == port
    # the server listens there, on every address, and Prometheus scrapes it there
    assert int(_flag(container["args"], "--port")) == port
    assert _flag(container["args"], "--host") == "0.0.0.0"
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert int(annotations["prometheus.io/port"]) == port
    # and the Service sends its traffic there
    (service_port,) = _one("Service")["spec"]["ports"]
    assert _port_number(container, service_port["targetPort"]) == port


def test_the_container_image_serves_the_port_the_manifests_use() -> None:
    instructions = containerfile_instructions()
    (expose,) = [rest for keyword, rest in instructions if keyword == "EXPOSE"]
    (port,) = [p["containerPort"] for p in _container(_one("Deployment"))["ports"]]
    assert int(expose) == port
    (healthcheck,) = [rest for keyword, rest in instructions if keyword == "HEALTHCHECK"]
    assert f"http://127.0.0.1:{port}/health" in healthcheck


def _secret_keys() -> dict[str, set[str]]:
    return {
        s["metadata"]["name"]: set(s.get("stringData", {})) | set(s.get("data", {}))
        for s in _objects("Secret")
    }


def _secret_references(obj: Obj) -> Iterator[tuple[str, str]]:
    """``(secret name, key)`` of every Secret key a workload's pods read, by env or by volume."""
    for container in _pod_spec(obj)["containers"]:
        for env in container.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref is not None:
                yield ref["name"], ref["key"]
    for volume in _pod_spec(obj).get("volumes", []):
        if "secret" in volume:
            for item in volume["secret"]["items"]:
                yield volume["secret"]["secretName"], item["key"]


def test_every_secret_key_the_pods_read_is_in_the_example_secret() -> None:
    keys = _secret_keys()
    references = [ref for obj in _workloads() for ref in _secret_references(obj)]
    assert ("template-engine-database", "database-url") in references
    for name, key in references:
        assert key in keys.get(name, set()), f"the pods read {name}/{key}; the example Secrets hold {keys}"


def test_the_database_url_comes_from_the_secret_in_the_deployment_and_the_upgrade_job() -> None:
    for obj in _workloads():
        (env,) = [e for e in _container(obj)["env"] if e["name"] == "TEMPLATE_ENGINE_DATABASE_URL"]
        assert "value" not in env
        assert env["valueFrom"]["secretKeyRef"] == {"name": "template-engine-database", "key": "database-url"}


def test_the_example_secrets_are_placeholders_that_cannot_reach_a_database() -> None:
    for secret in _objects("Secret"):
        for value in secret["stringData"].values():
            assert "REPLACE-ME" in value
    url = _one_secret("template-engine-database")["stringData"]["database-url"]
    host = re.sub(r"^.*@([^:/]+).*$", r"\1", url)
    assert host.endswith(".invalid")  # RFC 2606: never resolves
    auth = yaml.safe_load(_one_secret("template-engine-auth")["stringData"]["auth.yaml"])
    assert auth == {"tokens": []}  # nobody signs in with the placeholder


def _one_secret(name: str) -> Obj:
    (secret,) = [s for s in _objects("Secret") if s["metadata"]["name"] == name]
    return secret


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_the_disruption_budget_and_the_service_select_the_server_pods_and_only_them() -> None:
    deployment = _one("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    job_labels = _one("Job")["spec"]["template"]["metadata"]["labels"]
    pdb = _one("PodDisruptionBudget")
    selectors = {
        "PodDisruptionBudget": pdb["spec"]["selector"]["matchLabels"],
        "Service": _one("Service")["spec"]["selector"],
        "Deployment": deployment["spec"]["selector"]["matchLabels"],
    }
    for kind, selector in selectors.items():
        assert selector, f"{kind} selects every pod"
        assert _selects(selector, pod_labels), f"{kind} does not select the Deployment's pods"
        assert not _selects(selector, job_labels), f"{kind} selects the upgrade Job's pod"
    # a drain takes one replica of three at most
    assert deployment["spec"]["replicas"] == 3
    assert pdb["spec"].get("maxUnavailable") == 1 or pdb["spec"].get("minAvailable") == 2


def test_the_pods_run_as_the_images_user_on_a_read_only_root_with_a_writable_tmp() -> None:
    (user,) = [rest for keyword, rest in containerfile_instructions() if keyword == "USER"]
    uid = int(user.split(":")[0])
    for obj in _workloads():
        pod = _pod_spec(obj)
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == uid != 0
        container = _container(obj)
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
        (tmp,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
        (volume,) = [v for v in pod["volumes"] if v["name"] == tmp["name"]]
        assert "emptyDir" in volume


def test_every_container_has_resource_requests_and_limits() -> None:
    for obj in _workloads():
        resources = _container(obj)["resources"]
        for bound in ("requests", "limits"):
            assert set(resources[bound]) == {"cpu", "memory"}, f"{obj['kind']} {bound}"


#: The placeholder Secrets: an example applied by hand once, if at all, never by ``kubectl apply -k``, which
#: would put the placeholders back over the real Secrets on every release.
EXAMPLE_SECRET = "secret.example.yaml"


def test_the_kustomization_lists_every_file_of_the_folder_but_the_example_secret() -> None:
    kustomization = _kustomization()
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kustomization["kind"] == "Kustomization"
    files = sorted(p.name for p in KUBE.iterdir() if p.name not in {"kustomization.yaml", EXAMPLE_SECRET})
    assert sorted(kustomization["resources"]) == files
    assert len(set(kustomization["resources"])) == len(kustomization["resources"])


def test_the_kustomization_applies_no_secret() -> None:
    assert (KUBE / EXAMPLE_SECRET).is_file()
    assert EXAMPLE_SECRET not in _kustomization()["resources"]
    applied = [obj["kind"] for name, _, obj in _documents() if name in _kustomization()["resources"]]
    assert "Secret" not in applied


def test_every_image_is_set_by_the_kustomization_to_this_release() -> None:
    (image,) = _kustomization()["images"]
    assert image["newTag"] == VERSION
    for obj in _workloads():
        assert _container(obj)["image"] == image["name"], (
            f"{obj['kind']}'s image is not rewritten by kustomize"
        )


def test_the_upgrade_job_runs_once_and_reads_the_database_url_from_its_env() -> None:
    job = _one("Job")
    assert _pod_spec(job)["restartPolicy"] == "Never"
    container = _container(job)
    assert container["args"] == ["db", "upgrade"]
    env = {e["name"] for e in container["env"]}
    assert "TEMPLATE_ENGINE_DATABASE_URL" in env


def _secret_variables(obj: Obj) -> set[str]:
    """The env variables of a workload's container that hold a Secret's value."""
    return {e["name"] for e in _container(obj).get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}


def test_no_secret_is_on_a_command_line() -> None:
    """An argument is on the node's process list (``ps``) for anyone on the node: a Secret is read from the
    environment, never expanded into ``command`` or ``args`` (``$(VAR)``), nor written there."""
    placeholders = [v for s in _objects("Secret") for v in s["stringData"].values()]
    for obj in _workloads():
        container = _container(obj)
        words = [*container.get("command", []), *container.get("args", [])]
        for variable in _secret_variables(obj):
            assert not any(f"$({variable})" in word for word in words), (
                f"{obj['kind']} passes the Secret in ${variable} on its command line"
            )
        for value in placeholders:
            assert not any(value in word for word in words), f"{obj['kind']} writes a Secret's value"
        assert not any(word.startswith("--database-url") for word in words)


# -- the Containerfile ---------------------------------------------------------------------------------------


def test_deploy_dockerfile_is_thecontainerfile_instructions() -> None:
    assert (DEPLOY / "Dockerfile").resolve() == CONTAINERFILE.resolve()


def test_every_file_the_containerfile_copies_from_the_checkout_exists() -> None:
    instructions = containerfile_instructions()
    stages = {rest.split()[-1] for keyword, rest in instructions if keyword == "FROM" and " AS " in rest}
    copies = [shlex.split(rest) for keyword, rest in instructions if keyword == "COPY"]
    assert copies
    for words in copies:
        options = [w for w in words if w.startswith("--")]
        *sources, _ = [w for w in words if not w.startswith("--")]
        if options:
            assert [o.split("=", 1)[0] for o in options] == ["--from"]
            assert options[0].split("=", 1)[1] in stages
            continue
        for source in sources:
            assert (REPO / source).exists(), f"COPY {source}: not in the repository"


def test_the_image_is_multi_stage_slim_and_runs_as_a_user_that_is_not_root() -> None:
    instructions = containerfile_instructions()
    (arg,) = [rest for keyword, rest in instructions if keyword == "ARG"]
    name, _, image = arg.partition("=")
    assert re.fullmatch(r"python:3\.(1[1-9])-slim(-\w+)?", image), image
    froms = [rest for keyword, rest in instructions if keyword == "FROM"]
    assert froms == [f"${{{name}}} AS build", f"${{{name}}}"]
    (user,) = [rest for keyword, rest in instructions if keyword == "USER"]
    assert user.split(":")[0] not in {"0", "root"}
    # the USER comes after the last FROM: the final stage runs as it
    keywords = [keyword for keyword, _ in instructions]
    assert keywords.index("USER") > len(keywords) - 1 - keywords[::-1].index("FROM")
    (install,) = [rest for keyword, rest in instructions if keyword == "RUN" and "pip install" in rest]
    assert "[service]" in install


def _exec_form(rest: str) -> list[str]:
    words = json.loads(rest)
    assert isinstance(words, list) and all(isinstance(w, str) for w in words)
    return words


def test_the_image_runs_template_engine_serve_on_every_address() -> None:
    instructions = containerfile_instructions()
    (entrypoint,) = [_exec_form(rest) for keyword, rest in instructions if keyword == "ENTRYPOINT"]
    (command,) = [_exec_form(rest) for keyword, rest in instructions if keyword == "CMD"]
    assert [*entrypoint, *command] == ["template-engine", "serve", "--host", "0.0.0.0", "--port", "8080"]
    # the Deployment's args replace the CMD and keep the ENTRYPOINT
    assert _container(_one("Deployment"))["args"] == command


# -- the commands are the CLI's ------------------------------------------------------------------------------


def _command_lines() -> list[list[str]]:
    """Every ``template-engine`` argument list that the image and the manifests run."""
    instructions = containerfile_instructions()
    (command,) = [_exec_form(rest) for keyword, rest in instructions if keyword == "CMD"]
    return [command, *(_container(obj)["args"] for obj in _workloads())]


def _resolve(args: Sequence[str]) -> tuple[tuple[str, ...], click.Command | None, list[str]]:
    """The subcommand path of ``args``, its click command (``None`` when the CLI has no such command) and
    the arguments left for it."""
    command: click.Command = main
    path: list[str] = []
    rest = list(args)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(click.Context(command), rest[0])
        path.append(rest.pop(0))
        if sub is None:
            return tuple(path), None, rest
        command = sub
    return tuple(path), command, rest


def test_the_commands_not_yet_in_the_cli_are_used_and_still_absent() -> None:
    used = {_resolve(args)[0] for args in _command_lines()}
    for path in NOT_YET_IN_CLI_COMMANDS:
        assert path in used
        _, command, _ = _resolve(path)
        assert command is None, (
            f"`{' '.join(path)}` is in the CLI now: remove it from NOT_YET_IN_CLI_COMMANDS"
        )


@pytest.mark.parametrize("args", _command_lines(), ids=lambda args: " ".join(args[:2]))
def test_every_command_the_deployment_runs_is_the_clis_with_real_options(args: list[str]) -> None:
    path, command, rest = _resolve(args)
    if path in NOT_YET_IN_CLI_COMMANDS:
        assert command is None  # checked as soon as it exists (the test above)
        return
    assert command is not None, f"template-engine has no command `{' '.join(path)}`"
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    options = {opt for param in command.params for opt in param.opts}
    for word in rest:
        if word.startswith("--"):
            flag = word.split("=", 1)[0]
            assert flag in options and flag in result.output, f"`{' '.join(path)}` has no option {flag}"
    # and the values parse (types, ranges), without running anything
    command.make_context(" ".join(path), list(rest))


def test_the_servers_environment_is_read_by_serve_and_its_values_parse() -> None:
    """Each variable the Deployment sets is a setting of ``serve`` (``service.settings.KNOBS``), and each
    value it writes out is one that setting reads (a bad one would stop every pod at start)."""
    from template_engine.service.settings import KNOBS, resolve

    container = _container(_one("Deployment"))
    by_variable = {knob.variable: knob for knob in KNOBS}
    for env in container["env"]:
        name = env["name"]
        assert name in by_variable, f"the Deployment sets {name}, which `serve` does not read"
        if "value" in env:
            resolve(by_variable[name].name, env={name: env["value"]})  # raises SettingError if unreadable
