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

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: KAI's threshold: a priority class of this value or more is not preemptible (``kai/priority_README.md``).
NON_PREEMPTIBLE_FROM = 100

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
        return pattern

    @model_validator(mode="after")
    def _classes_known(self) -> ClusterSettings:
        names = [c.name for c in self.priorityClasses]
        if len(set(names)) != len(names):
            raise ValueError("priority class names that are unique")
        for field in ("preemptibleClass", "nonPreemptibleClass"):
            chosen = getattr(self, field)
            if chosen not in names:
                raise ValueError(f"{field} naming one of priorityClasses {names} (got {chosen!r})")
        return self

    def namespace(self, project: str) -> str:
        return self.namespacePattern.replace("{project}", project)

    def queue(self, project: str | None) -> str:
        return self.queues.get(project, self.defaultQueue) if project is not None else self.defaultQueue

    def priority(self, name: str) -> int | None:
        """The value of the class ``name``, or ``None`` if the cluster has no such class."""
        return next((c.value for c in self.priorityClasses if c.name == name), None)


DEFAULT_SETTINGS = ClusterSettings()

__all__ = ["DEFAULT_SETTINGS", "NON_PREEMPTIBLE_FROM", "ClusterSettings", "PriorityClass"]
