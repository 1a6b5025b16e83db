"""``template-engine init``: a minimal org to start from, which ``validate`` and ``check`` accept.

Each YAML file starts with the ``yaml-language-server`` header that points an editor at the JSON Schema of its
kind; the schemas are written into ``.template-engine/schemas/`` (a folder the loader ignores), so completion
and typo squiggles work without a network.
"""

from __future__ import annotations

import json

from template_engine.views.schema import SCHEMA_KINDS, json_schema

__all__ = ["SCHEMA_FOLDER", "schema_header", "starter_files"]

#: Where ``init`` writes the schemas, relative to the templates folder.
SCHEMA_FOLDER = ".template-engine/schemas"

_FILES: dict[str, tuple[str, str]] = {
    "org.yaml": (
        "org",
        """\
# The departments and their projects; each project belongs to exactly one department.
departments:
- name: research
  projects:
  - vision
""",
    ),
    "cluster.yaml": (
        "cluster",
        """\
# The cluster the org runs on: how `template-engine manifests` names its objects (docs/cluster.md).
# Every field has a default (KAI Scheduler's open-source install, Run:ai's namespace convention);
# uncomment a line to change it.
namespacePattern: runai-{project}
# schedulerName: kai-scheduler
# defaultQueue: default-queue
# queues:                  # a project's own KAI queue, instead of defaultQueue
#   vision: vision
# nodePoolLabel: kai.scheduler/node-pool
""",
    ),
    "system/defaults.yaml": (
        "defaults",
        """\
# Org-wide defaults: the lowest layer of every composition.
spec:
  image: python:3.11
  imagePullPolicy: IfNotPresent
  environmentVariables:
  - name: TZ
    value: UTC
  labels:
  - name: org
    value: example
""",
    ),
    "system/policy.yaml": (
        "policy",
        """\
# Org-wide policy: defaults suggest, policies decide.
rules:
  worker:
    image:
      required: true
    numWorkers:
      min: 1
      max: 16
""",
    ),
    "departments/research/defaults.yaml": (
        "defaults",
        """\
# Defaults of department research (above the system's).
spec:
  labels:
  - name: department
    value: research
""",
    ),
    "projects/vision/defaults.yaml": (
        "defaults",
        """\
# Defaults of project vision (above its department's).
spec:
  labels:
  - name: project
    value: vision
""",
    ),
    "projects/vision/templates/train.yaml": (
        "template",
        """\
# A template of project vision; meta.name is the file name.
meta:
  name: train
  description: Distributed PyTorch training
spec:
  distributedFramework: PyTorch
  numWorkers: 2
  command: torchrun train.py
  environmentVariables:
  - name: RUN_NAME
    value: "{{ project.name }}-{{ template.name }}"
""",
    ),
}


def schema_header(rel: str, kind: str) -> str:
    """``# yaml-language-server: $schema=../.template-engine/schemas/defaults.json`` for the file ``rel``."""
    up = "../" * rel.count("/")
    return f"# yaml-language-server: $schema={up}{SCHEMA_FOLDER}/{kind}.json\n"


def starter_files() -> dict[str, str]:
    """The files of the starter org (relative POSIX path -> text), the schemas of every kind included."""
    files = {rel: schema_header(rel, kind) + text for rel, (kind, text) in _FILES.items()}
    for name in SCHEMA_KINDS:
        text = json.dumps(json_schema(name), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        files[f"{SCHEMA_FOLDER}/{name}.json"] = text
    return files
