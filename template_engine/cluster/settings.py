"""The org's cluster settings: how its compositions become objects on its cluster.

Kept in ``cluster.yaml`` at the top of a templates folder (optional) and in the service.  Every field has a
default, so an org without settings renders for an open-source KAI Scheduler install with Run:ai's namespace
convention (docs/cluster.md, "Cluster settings"):

- ``namespacePattern: runai-{project}``: Run:ai creates a namespace ``runai-<project>`` per project.
- ``schedulerName: kai-scheduler``: the KAI Scheduler's name in its open-source install (a Run:ai cluster
  calls it ``runai-scheduler``).
- ``queueLabel: kai.scheduler/queue``, ``defaultQueue: default-queue``: KAI's queue label and the queue of
  its quick start (``reference/cluster/kai/quickstart_default-queues.yaml``); ``queues`` names a project's
  own queue.
- ``nodePoolLabel: kai.scheduler/node-pool``: KAI's node-pool label.
- ``priorityClasses``: the classes a KAI install creates (``train`` 50, ``build-preemptible`` 75, ``build``
  100, ``inference`` 125; a value of 100 or more is not preemptible), and which class a Run:ai
  ``preemptibility`` without a ``priorityClass`` stands for.
- ``nodeTypeLabel: run.ai/type``: the node label Run:ai's ``nodeType`` selects on.
- ``gitSyncImage``: the image of the init container that clones a git data source.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

#: KAI's threshold: a priority class of this value or more is not preemptible (``kai/priority_README.md``).
NON_PREEMPTIBLE_FROM = 100

#: What a namespace pattern may hold besides ``{project}`` (a DNS-1123 label's characters).
_NAMESPACE_TEXT = re.compile(r"[a-z0-9-]*")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NAME = Annotated[str, Field(min_length=1, max_length=253)]


class PriorityClass(BaseModel):
    """A priority class the cluster has: its name and value."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: _NAME
    value: int = Field(ge=-(2**31), le=10**9)


def _kai_classes() -> list[PriorityClass]:
    return [
        PriorityClass(name="train", value=50),
        PriorityClass(name="build-preemptible", value=75),
        PriorityClass(name="build", value=100),
        PriorityClass(name="inference", value=125),
    ]


class ClusterSettings(BaseModel):
    """``cluster.yaml``: the org's cluster, as the objects must name it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    namespacePattern: str = Field(default="runai-{project}", min_length=1, max_length=253)
    schedulerName: _NAME = "kai-scheduler"
    queueLabel: _NAME = "kai.scheduler/queue"
    defaultQueue: _NAME = "default-queue"
    queues: dict[str, _NAME] = Field(default_factory=dict)
    nodePoolLabel: _NAME = "kai.scheduler/node-pool"
    nodeTypeLabel: _NAME = "run.ai/type"
    priorityClasses: list[PriorityClass] = Field(default_factory=_kai_classes, min_length=1)
    preemptibleClass: _NAME = "train"
    nonPreemptibleClass: _NAME = "build"
    gitSyncImage: _NAME = "registry.k8s.io/git-sync/git-sync:v4.4.0"

    @field_validator("namespacePattern")
    @classmethod
    def _only_project(cls, pattern: str) -> str:
        for name in _PLACEHOLDER.findall(pattern):
            if name != "project":
                raise ValueError(f"a pattern whose only placeholder is {{project}} (got {{{name}}})")
        fixed = pattern.replace("{project}", "")
        if not _NAMESPACE_TEXT.fullmatch(fixed):
            odd = sorted({c for c in fixed if not _NAMESPACE_TEXT.fullmatch(c)})
            raise ValueError(
                "a Kubernetes namespace around {project}: lowercase letters, digits and '-' "
                f"(got {', '.join(repr(c) for c in odd)})"
            )
        return pattern

    @field_validator("priorityClasses")
    @classmethod
    def _unique_classes(cls, classes: list[PriorityClass]) -> list[PriorityClass]:
        names = [c.name for c in classes]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"priority class names that are unique ({', '.join(repeated)} given twice)")
        return classes

    @field_validator("preemptibleClass", "nonPreemptibleClass")
    @classmethod
    def _class_known(cls, chosen: str, info: ValidationInfo) -> str:
        """Checked at its own field (so a problem names it, at its line), against the classes read above."""
        classes = info.data.get("priorityClasses")
        if classes is None:  # the classes themselves are refused: their own problem says why
            return chosen
        names = [c.name for c in classes]
        if chosen not in names:
            raise ValueError(f"one of priorityClasses {names} (got {chosen!r})")
        return chosen

    def namespace(self, project: str) -> str:
        return self.namespacePattern.replace("{project}", project)

    def queue(self, project: str | None) -> str:
        return self.queues.get(project, self.defaultQueue) if project is not None else self.defaultQueue

    def priority(self, name: str) -> int | None:
        """The value of the class ``name``, or ``None`` if the cluster has no such class."""
        return next((c.value for c in self.priorityClasses if c.name == name), None)


DEFAULT_SETTINGS = ClusterSettings()

__all__ = ["DEFAULT_SETTINGS", "NON_PREEMPTIBLE_FROM", "ClusterSettings", "PriorityClass"]
