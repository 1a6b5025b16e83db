"""One reason the cluster would refuse an object: where in the object, which rule, and a sentence."""

from __future__ import annotations

from dataclasses import dataclass, field

#: A place inside an object: mapping keys and list indexes, from the object's root.
ObjectPath = tuple[str | int, ...]


def format_object_path(kind: str, path: ObjectPath) -> str:
    """``PyTorchJob.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].name``."""
    out = kind
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else f".{step}"
    return out


@dataclass(frozen=True, slots=True)
class ObjectProblem:
    """What the cluster refuses in one object.

    ``rule`` names the rule, by who applies it: ``schema.<keyword>`` for the CRD's or Kubernetes' schema
    (``schema.type``, ``schema.required``, ``schema.unknownField``, ``schema.enum``, ``schema.listMapKeys``
    ...), ``kubernetes.<check>`` for what the API server checks when the operator creates the pods
    (``kubernetes.dns1123Label``, ``kubernetes.labelValue``, ``kubernetes.uniqueContainerName``,
    ``kubernetes.mountVolume``...), ``operator.<check>`` for the operators' own admission rules
    (``operator.replicaTypes``, ``operator.defaultContainer``...).
    """

    kind: str
    path: ObjectPath
    rule: str
    message: str
    #: The index of the object among a composition's objects, when known (two objects of one kind, a
    #: workspace's Services, are told apart by it); not part of the problem's identity.
    index: int | None = field(default=None, compare=False)

    def place(self) -> str:
        return format_object_path(self.kind, self.path)

    def __str__(self) -> str:
        return f"{self.place()}: {self.message} ({self.rule})"


__all__ = ["ObjectPath", "ObjectProblem", "format_object_path"]
