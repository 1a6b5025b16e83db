"""What the cluster runs: a composition rendered into Kubeflow job (or, for the other kinds, Job, StatefulSet,
Service, Knative Service) and KAI Scheduler objects, and checked.

The contract is ``docs/cluster-contract.md`` (a copy of the shared ``CLUSTER.md``); ``docs/cluster.md`` is
the mapping field by field, what is not representable and why, and every decision with its source.

- :mod:`~template_engine.cluster.settings`: the org's cluster settings (namespace, scheduler, queues...).
- :mod:`~template_engine.cluster.kube`: the checks Kubernetes applies to names, labels, quantities and pod
  templates when the operator creates the pods (the CRD schemas do not carry them).
- :mod:`~template_engine.cluster.schemas`: the vendored CRD schemas and the JSON Schema validator that
  understands Kubernetes' extensions; core objects (``PersistentVolumeClaim``) by ``kubernetes-validate``.
- :mod:`~template_engine.cluster.pods`: a spec -> a pod template, with each value's origin (every kind's).
- :mod:`~template_engine.cluster.mapping`: a composition -> the objects, with each value's origin.
- :mod:`~template_engine.cluster.workloads`: the objects of a training (``Job``), a workspace
  (``StatefulSet``, ``Service``) and an inference (Knative ``Service``).
- :mod:`~template_engine.cluster.workload_rules`: what Kubernetes and Knative refuse in those, beyond schemas.
- :mod:`~template_engine.cluster.validity`: the objects -> every reason the cluster would refuse them.

Everything here is pure: data in, data out (the vendored schemas are package data, read once).
"""
