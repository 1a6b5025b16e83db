"""The vendored Knative Serving CRD (issue 32): upstream's file unchanged below a header that names its
release, commit and licence, and the schema the engine reads from it."""

from __future__ import annotations

import hashlib

from kind_specs import REPO

from template_engine.cluster.schemas import KNATIVE_SERVICE, knative_schema

VENDORED = REPO / "template_engine" / "cluster" / "crds" / KNATIVE_SERVICE[1]
#: SHA-256 of ``config/core/300-resources/service.yaml`` at knative/serving tag knative-v1.23.0 (commit
#: 7ed4aa2ab601e3a33c6552285f6e0d910747351d), as ``git show`` gives it.
UPSTREAM_SHA256 = "2df2faa748f4d8e9470a2a5e9f208d7310aa89fc8cad1f2b1b9941fefe3def33"


def test_the_vendored_crd_is_upstreams_file_below_its_header() -> None:
    lines = VENDORED.read_bytes().splitlines(keepends=True)
    header = lines[:5]
    assert all(line.startswith(b"# ") for line in header)
    text = b"".join(header).decode()
    assert "knative-v1.23.0" in text
    assert "7ed4aa2ab601e3a33c6552285f6e0d910747351d" in text
    assert "Apache License, Version 2.0" in text
    assert hashlib.sha256(b"".join(lines[5:])).hexdigest() == UPSTREAM_SHA256


def test_the_schema_read_is_the_v1_service_with_its_pod_spec() -> None:
    schema = knative_schema()
    pod = schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
    assert pod["required"] == ["containers"]
    assert {"containerConcurrency", "timeoutSeconds", "schedulerName", "containers"} <= set(pod["properties"])
    assert pod["properties"]["tolerations"]["items"]["x-kubernetes-preserve-unknown-fields"] is True
