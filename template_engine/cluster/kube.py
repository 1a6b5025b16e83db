"""What the API server checks when the operator creates pods (first cut: names and mounts).

Read from Kubernetes' ``apimachinery/pkg/util/validation/validation.go`` (``IsDNS1035Label``,
``IsValidPortName``) and ``pkg/apis/core/validation/validation.go`` (``validateVolumeMounts``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from template_engine.cluster.problems import ObjectPath, ObjectProblem

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_PORT = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def dns1035_label(text: str) -> str | None:
    """``IsDNS1035Label``: lowercase letters, digits and '-', starting with a letter, at most 63."""
    if len(text) > 63:
        return "must be no more than 63 characters"
    if not _DNS1035.fullmatch(text):
        return (
            "a DNS-1035 label must consist of lower case letters, digits or '-', start with a letter and "
            "end with a letter or digit"
        )
    return None


def port_name(text: str) -> str | None:
    """``IsValidPortName`` (IANA_SVC_NAME): at most 15, lowercase letters, digits and '-', one letter."""
    if len(text) > 15:
        return "must be no more than 15 characters"
    if not _PORT.fullmatch(text) or "--" in text or not re.search("[a-z]", text):
        return "must contain only lowercase letters, digits and '-', with a letter, no '--'"
    return None


def metadata_problems(kind: str, at: ObjectPath, metadata: Mapping[str, Any]) -> list[ObjectProblem]:
    del kind, at, metadata
    return []


def pod_template_problems(kind: str, at: ObjectPath, template: Mapping[str, Any]) -> list[ObjectProblem]:
    """Every volume mount names a volume of the pod (``validateVolumeMounts``)."""
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return []
    volumes = {v.get("name") for v in spec.get("volumes") or () if isinstance(v, Mapping)}
    found: list[ObjectProblem] = []
    for group in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(group) or ()):
            for m_index, mount in enumerate(
                container.get("volumeMounts") or () if isinstance(container, Mapping) else ()
            ):
                if isinstance(mount, Mapping) and mount.get("name") not in volumes:
                    path = (*at, "spec", group, index, "volumeMounts", m_index, "name")
                    found.append(
                        ObjectProblem(
                            kind,
                            path,
                            "kubernetes.mountVolume",
                            f"not found: no volume {mount.get('name')!r}",
                        )
                    )
    return found
