"""``db import`` and ``db export`` of an org on several clusters (issue 33), and the service's answers of one.

A folder whose ``org.yaml`` names clusters goes into the database with a cluster row each (Run:ai's UUID, its
``domain`` and ``version``, its ``cluster.yaml`` with its text), every department in its cluster and every
document of ``clusters/C/`` at cluster C's scope; ``db export`` writes it back, and the ids, UUIDs, versions
and audit fields through the bookkeeping, so that export, import and export again give the same files byte
for byte, on SQLite and PostgreSQL.  Imported, the service composes each pair as the library composes the
folder: the cluster layer reaches its own cluster's projects only, and the objects of a pair run in its own
cluster's namespace with its own cluster's priority classes.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO, MakeApp, open_client
from sqlalchemy import Engine, select
from test_service_migration import _dump, _files, _populate

from template_engine import InputError, compose, load_org
from template_engine.cli import main
from template_engine.kinds import kind_named
from template_engine.org import Org, View
from template_engine.service.app import create_app
from template_engine.service.bookkeeping import META_FILE
from template_engine.service.exporter import export_folder
from template_engine.service.importer import import_folder
from template_engine.service.settings import Settings
from template_engine.service.storage import snapshot
from template_engine.service.storage import tables as t
from template_engine.service.storage.database import create_db_engine, ensure_schema, transaction
from template_engine.service.storage.repository import CLUSTERS, Repository

TWO_CLUSTERS = REPO / "examples" / "two-clusters"

EAST_SETTINGS = """\
# The DGX cluster: its own namespaces and priority classes (this comment is kept by the import).
namespacePattern: east-{project}
priorityClasses:
- {name: scavenger, value: 10}
- {name: reserved, value: 100}
preemptibleClass: scavenger
nonPreemptibleClass: reserved
"""

TRAIN = """\
meta: {name: NAME}
spec:
  distributedFramework: PyTorch
  numWorkers: 2
  image: pytorch/pytorch:2.3
  compute: {gpuDevicesRequest: 1}
"""

#: An org on two clusters with something of every kind at cluster scope: Run:ai's cluster fields and a
#: description in org.yaml, a cluster.yaml with comments and a cluster without one, cluster defaults, a
#: policy with comments, another kind's policy, a template of each cluster (one of them a training) and a
#: cluster's data source that a cluster template uses, and a template that east's policy refuses.
FOLDER: dict[str, str] = {
    "org.yaml": """\
clusters:
- name: east
  description: the on-premises DGX cluster
  domain: east.acme.internal
  version: 2.18.0
  departments:
  - name: research
    description: the research groups
    projects:
    - vision
    - name: nlp
      requestedNamespace: nlp-team
- name: west
  departments:
  - name: applied
    projects:
    - recsys
""",
    "clusters/east/cluster.yaml": EAST_SETTINGS,
    "system/defaults.yaml": "spec:\n  workingDir: /work\n  nodePools:\n  - default\n",
    "clusters/east/defaults.yaml": (
        "spec:\n  nodePools:\n  - h100\n  labels:\n  - name: site\n    value: east\n"
    ),
    "clusters/east/policy.yaml": (
        "# East's GPUs are shared: at most four a worker.\nrules:\n  worker:\n    compute:\n"
        "      gpuDevicesRequest: {max: 4}\n"
    ),
    "clusters/west/training-policy.yaml": (
        "defaults:\n  backoffLimit: 1\nrules:\n  parallelism:\n    max: 2\n"
    ),
    "system/templates/train.yaml": TRAIN.replace("NAME", "train"),
    # breaks east's policy (four GPUs a worker): not runnable in east, runnable in west
    "system/templates/wide.yaml": TRAIN.replace("NAME", "wide").replace(
        "gpuDevicesRequest: 1", "gpuDevicesRequest: 8"
    ),
    "clusters/east/templates/east-only.yaml": (
        TRAIN.replace("NAME", "east-only") + "assets:\n  datasources:\n  - name: east-data\n"
    ),
    "clusters/west/templates/west-sweep.yaml": (
        "meta: {name: west-sweep}\nkind: training\nspec:\n  image: python:3.11\n  completions: 2\n"
        "  parallelism: 1\n"
    ),
    "clusters/east/assets/datasources/east-data.yaml": (
        "meta: {name: east-data}\nspec:\n  storage:\n    pvc:\n    - {claimName: east-claim, path: /east}\n"
    ),
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _engine(url: str) -> Engine:
    engine = create_db_engine(url)
    ensure_schema(engine)
    return engine


def _rows(engine: Engine, table: Any) -> list[dict[str, Any]]:
    with transaction(engine, write=False) as connection:
        rows = connection.execute(select(table).order_by(*table.primary_key.columns))
        return [dict(row._mapping) for row in rows]


def _compositions(org: Org) -> dict[tuple[View, str, str], dict[str, Any]]:
    """Every pair of ``org`` composed (its answer and its objects), by view, template scope and name."""
    out = {}
    for view, template in org.views():
        composed = compose(org, template, view)
        objects = list(composed.manifests.objects) if composed.manifests is not None else []
        out[(view, str(template.scope), template.name)] = {**composed.to_response(), "objects": objects}
    return out


_AUDIT = {"version", "updated_by", "updated_at", "settings_version"}


def _content(dump: dict[str, Any]) -> dict[str, Any]:
    """A dump without the columns that a replaced document moves on (its version and last writer)."""
    return {
        table: [{k: v for k, v in row.items() if k not in _AUDIT} for row in rows]
        if table != "counters"
        else rows
        for table, rows in dump.items()
    }


# -- import -------------------------------------------------------------------------------------------------


def test_a_folder_with_clusters_is_stored_at_cluster_scope(database_url: str, tmp_path: Path) -> None:
    folder = _write(tmp_path / "org", FOLDER)
    engine = _engine(database_url)
    report = import_folder(engine, folder)
    assert report is not None
    assert report.summary().startswith("2 added, 0 replaced clusters; 2 added, 0 replaced departments")
    assert "cluster settings added" in report.summary()  # east's (west has no cluster.yaml)

    clusters = {row["name"]: row for row in _rows(engine, t.clusters)}
    east, west = clusters["east"], clusters["west"]
    assert str(uuid.UUID(east["uuid"])) == east["uuid"] and east["uuid"] != west["uuid"]
    assert east["runai"] == {
        "description": "the on-premises DGX cluster",
        "domain": "east.acme.internal",
        "version": "2.18.0",
    }
    assert west["runai"] is None
    assert east["settings"]["namespacePattern"] == "east-{project}"
    assert east["settings_text"] == EAST_SETTINGS and east["settings_version"] == 1
    assert (west["settings"], west["settings_text"], west["settings_version"]) == (None, None, 0)
    departments = {row["name"]: row["cluster_id"] for row in _rows(engine, t.departments)}
    assert departments == {"research": east["id"], "applied": west["id"]}

    at_east, at_west = f"cluster:{east['id']}", f"cluster:{west['id']}"
    defaults = {row["scope_key"]: row for row in _rows(engine, t.defaults)}
    assert set(defaults) == {"system", at_east}
    assert defaults[at_east]["cluster_id"] == east["id"] and defaults[at_east]["department_id"] is None
    (policy,) = _rows(engine, t.policies)
    assert (policy["scope_key"], policy["cluster_id"]) == (at_east, east["id"])
    assert policy["text"] == FOLDER["clusters/east/policy.yaml"]
    (training,) = _rows(engine, t.kind_policies)
    assert (training["scope_key"], training["kind"], training["cluster_id"]) == (
        at_west,
        "training",
        west["id"],
    )
    templates = {row["name"]: row for row in _rows(engine, t.templates)}
    assert {n: (r["scope_type"], r["scope_key"], r["cluster_id"]) for n, r in templates.items()} == {
        "train": ("system", "system", None),
        "wide": ("system", "system", None),
        "east-only": ("cluster", at_east, east["id"]),
        "west-sweep": ("cluster", at_west, west["id"]),
    }
    assert templates["west-sweep"]["kind"] == "training"
    (asset,) = _rows(engine, t.assets)
    assert (asset["name"], asset["scope_type"], asset["cluster_id"]) == ("east-data", "cluster", east["id"])
    (used,) = _rows(engine, t.template_assets)
    assert used == {"template_id": templates["east-only"]["id"], "asset_id": asset["id"]}

    # The export is the folder again: org.yaml's clusters with their fields, each cluster.yaml and policy as
    # its text, and the same compositions.
    out = tmp_path / "out"
    exported = export_folder(engine, out)
    assert exported.summary().startswith("2 clusters, 2 departments, 3 projects")
    assert yaml.safe_load((out / "org.yaml").read_text()) == yaml.safe_load(FOLDER["org.yaml"])
    for rel in ("clusters/east/cluster.yaml", "clusters/east/policy.yaml"):
        assert (out / rel).read_text() == FOLDER[rel]
    assert not (out / "clusters/west/cluster.yaml").exists() and not (out / "cluster.yaml").exists()
    written = {rel for rel in _files(out) if not rel.startswith(".template-engine")}
    assert written == set(FOLDER)
    original, back = load_org(folder), load_org(out)
    assert not back.broken and back.warnings == original.warnings
    assert _compositions(back) == _compositions(original)

    # The same folder again changes nothing: no row added or removed, the same ids and UUIDs, the same
    # documents (replaced documents move on a version, as every document of a folder imported again does).
    before = _dump(database_url)
    again = import_folder(engine, folder)
    assert again is not None and again.summary().startswith(
        "0 added, 2 replaced clusters; 0 added, 2 replaced"
    )
    after = _dump(database_url)
    assert _content(after) == _content(before)
    assert {r["name"]: r["version"] for r in after["clusters"]} == {"east": 1, "west": 1}
    assert {r["name"]: r["version"] for r in after["departments"]} == {"research": 1, "applied": 1}
    engine.dispose()


def test_a_folder_with_clusters_into_an_org_of_one_cluster_adopts_it(
    database_url: str, tmp_path: Path
) -> None:
    """Into a database without clusters (the example org, its cluster.yaml stored): the first cluster of the
    folder adopts every department (those the folder does not name too) and the org's settings, as
    ``POST /api/v1/clusters`` does; the folder's departments go to their clusters."""
    engine = _engine(database_url)
    import_folder(engine, REPO / "templates")
    files = {
        "org.yaml": (
            "clusters:\n- name: east\n  departments:\n  - name: research\n    projects: [vision, nlp]\n"
            "- name: west\n  departments:\n  - name: ops\n    projects: [batch]\n"
        ),
        "clusters/west/cluster.yaml": "namespacePattern: west-{project}\n",
    }
    import_folder(engine, _write(tmp_path / "org", files))
    clusters = {row["name"]: row for row in _rows(engine, t.clusters)}
    with transaction(engine, write=False) as connection:
        legacy = Repository(connection).cluster_settings()
    assert legacy is not None
    assert (
        clusters["east"]["settings"] == legacy.document and clusters["east"]["settings_text"] == legacy.text
    )
    assert clusters["west"]["settings"] == {"namespacePattern": "west-{project}"}
    departments = {row["name"]: row["cluster_id"] for row in _rows(engine, t.departments)}
    east, west = clusters["east"]["id"], clusters["west"]["id"]
    assert departments == {"research": east, "applied": east, "ops": west}
    engine.dispose()


def test_a_folder_without_clusters_adds_no_department_to_an_org_that_has_them(
    sqlite_url: str, tmp_path: Path
) -> None:
    engine = _engine(sqlite_url)
    import_folder(engine, _write(tmp_path / "org", FOLDER))
    before = _dump(sqlite_url)
    flat = {"org.yaml": "departments:\n- name: research\n  projects: [vision, nlp]\n- name: ops\n"}
    with pytest.raises(InputError) as caught:
        import_folder(engine, _write(tmp_path / "flat", flat))
    text = caught.value.render()
    assert "org.yaml:4" in text and "department 'ops' would belong to no cluster" in text
    assert "(east, west)" in text and "clusters: [{name, departments}]" in text
    assert _dump(sqlite_url) == before
    # A folder without clusters that names only departments the database has is imported: they stay where
    # they are.
    import_folder(
        engine, _write(tmp_path / "known", {"org.yaml": flat["org.yaml"].replace("- name: ops\n", "")})
    )
    assert {r["name"]: r["cluster_id"] for r in _rows(engine, t.departments)} == {"research": 1, "applied": 2}
    engine.dispose()


def test_bad_cluster_folders_are_the_loader_s_errors(sqlite_url: str, tmp_path: Path) -> None:
    files = {**FOLDER, "clusters/north/defaults.yaml": "spec:\n  workingDir: /north\n"}
    runner = CliRunner()
    result = runner.invoke(
        main, ["db", "import", "--root", str(_write(tmp_path / "org", files)), "--database-url", sqlite_url]
    )
    checked = runner.invoke(main, ["validate", "--root", str(tmp_path / "org")])
    assert result.exit_code == 2 and checked.exit_code != 0
    assert "clusters/north" in result.output and "clusters/north" in checked.output
    top = {**FOLDER, "cluster.yaml": "namespacePattern: x-{project}\n"}
    result = runner.invoke(
        main, ["db", "import", "--root", str(_write(tmp_path / "top", top)), "--database-url", sqlite_url]
    )
    assert (
        result.exit_code == 2
        and "cluster.yaml at the top of the folder, but org.yaml names clusters" in result.output
    )
    engine = _engine(sqlite_url)
    with transaction(engine, write=False) as connection:
        assert Repository(connection).is_empty()
    engine.dispose()


# -- the round trip -----------------------------------------------------------------------------------------


def _clustered(make_app: MakeApp, url: str, tmp_path: Path) -> None:
    """The migration suite's org (edits, deletes, workloads), then clusters made through the API: east
    (Run:ai's domain and version) adopts every department and the org's settings; west gets settings; a
    third is made and deleted (its id is never given again); then a folder naming the clusters moves
    ``applied`` to west and adds documents at both clusters' scopes."""
    _populate(make_app, url)
    with open_client(make_app(url, seed=False)) as admin:
        body = {"name": "east", "domain": "east.acme.internal", "version": "2.18.0"}
        assert admin.post("/api/v1/clusters", json=body).status_code == 201
        west = admin.post("/api/v1/clusters", json={"name": "west"}).json()["uuid"]
        gone = admin.post("/api/v1/clusters", json={"name": "gone"}).json()["uuid"]
        assert admin.delete(f"/api/v1/clusters/{gone}").status_code == 204
        put = admin.put(
            "/api/v1/cluster-settings", params={"clusterId": west}, json={"namespacePattern": "w-{project}"}
        )
        assert put.status_code == 200, put.text
    files = {
        "org.yaml": (
            "clusters:\n- name: east\n  domain: east.acme.internal\n  version: 2.18.0\n  departments:\n"
            "  - name: research\n    projects: [vision, nlp]\n"
            "- name: west\n  departments:\n  - name: applied\n    projects: [speech]\n"
        ),
        "clusters/west/cluster.yaml": "# west's own\nnamespacePattern: west-{project}\n",
        # the example org's system policy rules the GPUs and a training's parallelism: these rule others
        "clusters/east/policy.yaml": (
            "# east's CPUs\nrules:\n  worker:\n    compute:\n      cpuCoreRequest: {max: 64}\n"
        ),
        "clusters/west/training-policy.yaml": "rules:\n  completions:\n    max: 4\n",
        **{
            rel: FOLDER[rel]
            for rel in (
                "clusters/east/defaults.yaml",
                "clusters/east/templates/east-only.yaml",
                "clusters/west/templates/west-sweep.yaml",
                "clusters/east/assets/datasources/east-data.yaml",
            )
        },
    }
    engine = _engine(url)
    report = import_folder(engine, _write(tmp_path / "clusters-folder", files))
    assert report is not None and "0 added, 2 replaced clusters" in report.summary()
    engine.dispose()


@pytest.mark.parametrize(("source", "target"), [("sqlite", "postgresql"), ("postgresql", "sqlite")])
def test_a_database_with_clusters_exports_and_imports_as_it_was(
    make_app: MakeApp,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    source: str,
    target: str,
) -> None:
    urls = {
        "sqlite": f"sqlite:///{tmp_path / 'service.db'}",
        "postgresql": request.getfixturevalue("postgres_url"),
    }
    _clustered(make_app, urls[source], tmp_path)
    before = _dump(urls[source])
    assert [c["name"] for c in before["clusters"]] == ["east", "west"] and before["cluster_settings"]
    assert {d["name"]: d["cluster_id"] for d in before["departments"]} == {
        "research": 1,
        "applied": 2,
        "ops": 1,
    }
    runner = CliRunner()
    out = tmp_path / "export"
    exported = runner.invoke(main, ["db", "export", "--root", str(out), "--database-url", urls[source]])
    assert exported.exit_code == 0, exported.output
    assert "2 clusters, 3 departments, 4 projects" in exported.output
    assert runner.invoke(main, ["validate", "--root", str(out)]).exit_code == 0
    org = yaml.safe_load((out / "org.yaml").read_text())
    assert [(c["name"], c.get("domain"), [d["name"] for d in c["departments"]]) for c in org["clusters"]] == [
        ("east", "east.acme.internal", ["research", "ops"]),
        ("west", None, ["applied"]),
    ]
    assert (
        out / "clusters/west/cluster.yaml"
    ).read_text() == "# west's own\nnamespacePattern: west-{project}\n"
    meta = yaml.safe_load((out / META_FILE).read_text())
    assert meta["sequences"]["clusters"] == 3 and meta["clusterSettings"]["document"]

    imported = runner.invoke(main, ["db", "import", "--root", str(out), "--database-url", urls[target]])
    assert imported.exit_code == 0, imported.output
    assert "ids, versions and audit fields restored" in imported.output
    assert _dump(urls[target]) == before

    # And back: the same files, byte for byte.
    again = tmp_path / "again"
    result = runner.invoke(main, ["db", "export", "--root", str(again), "--database-url", urls[target]])
    assert result.exit_code == 0, result.output
    assert _files(again) == _files(out)

    # The clusters' counter came along: the next cluster gets the same id on both (not the deleted one's).
    next_ids = []
    for url in (urls[source], urls[target]):
        engine = _engine(url)
        with transaction(engine, write=True) as connection:
            next_ids.append(Repository(connection).add_cluster(str(uuid.uuid4()), "later", None, "test"))
            assert snapshot.high_water(connection, t.clusters) == 4
        engine.dispose()
    assert next_ids == [4, 4]


def test_a_cluster_edited_after_the_export_keeps_its_uuid_and_gets_the_next_version(
    database_url: str, tmp_path: Path
) -> None:
    engine = _engine(database_url)
    import_folder(engine, _write(tmp_path / "org", FOLDER))
    out = tmp_path / "out"
    export_folder(engine, out)
    before = {row["name"]: row for row in _rows(engine, t.clusters)}
    org = out / "org.yaml"
    org.write_text(org.read_text().replace("version: 2.18.0", "version: 2.19.0"))
    settings = out / "clusters/east/cluster.yaml"
    settings.write_text(settings.read_text().replace("east-{project}", "dgx-{project}"))
    (out / "clusters/west/cluster.yaml").write_text("namespacePattern: west-{project}\n")
    with transaction(engine, write=True) as connection:
        t.metadata.drop_all(connection)
        connection.exec_driver_sql("DROP TABLE alembic_version")  # an empty database
    ensure_schema(engine)

    report = import_folder(engine, out)
    assert report is not None and report.restored and report.edited == 3
    after = {row["name"]: row for row in _rows(engine, t.clusters)}
    for name in ("east", "west"):
        kept = ("id", "uuid", "created_by", "created_at")
        assert {k: after[name][k] for k in kept} == {k: before[name][k] for k in kept}
    east, west = after["east"], after["west"]
    assert east["runai"]["version"] == "2.19.0" and east["version"] == before["east"]["version"] + 1
    assert east["settings"]["namespacePattern"] == "dgx-{project}" and east["settings_version"] == 2
    assert east["updated_by"] == "import" and east["updated_at"] > before["east"]["updated_at"]
    assert west["version"] == 1 and west["settings_version"] == 1
    assert west["settings"] == {"namespacePattern": "west-{project}"} and west["settings_text"] is None
    engine.dispose()


# -- the service answers what the library composes -----------------------------------------------------------


def _served_ids(engine: Engine) -> tuple[dict[tuple[str, str], tuple[str, str]], dict[str, int]]:
    """The stored templates by (scope, name) -> (id, kind), and the projects' ids by name."""
    with transaction(engine, write=False) as connection:
        repo = Repository(connection)
        names = {
            **{f"cluster:{c.id}": f"cluster:{c.name}" for c in repo.units(CLUSTERS)},
            **{f"department:{d.id}": f"department:{d.name}" for d in repo.departments()},
            **{f"project:{p.id}": f"project:{p.name}" for p in repo.projects()},
            "system": "system",
        }
        templates = {(names[row.scope_key], row.name): (row.id, row.kind) for row in repo.templates()}
        projects = {p.name: p.id for p in repo.projects()}
    return templates, projects


@pytest.mark.parametrize("which", ["two-clusters", "every-kind"])
def test_the_service_answers_what_the_library_composes_for_each_cluster(
    auth_file: Path, tmp_path: Path, which: str
) -> None:
    folder = TWO_CLUSTERS if which == "two-clusters" else _write(tmp_path / "org", FOLDER)
    url = f"sqlite:///{tmp_path / 'service.db'}"
    engine = _engine(url)
    import_folder(engine, folder)
    templates, projects = _served_ids(engine)
    engine.dispose()
    org = load_org(folder)
    assert not org.broken and org.clusters
    app = create_app(Settings(database_url=url, auth_file=auth_file))
    compared = 0
    with open_client(app) as client:
        for view, template in org.views():
            scope = (
                "system" if template.scope.name is None else f"{template.scope.type}:{template.scope.name}"
            )
            template_id, kind = templates[(scope, template.name)]
            base = f"/api/v1/workload-templates/{kind_named(kind).template_segment}/{template_id}"
            params = {"projectId": str(projects[view.project])} if view.project is not None else {}
            served = client.get(base, params=params)
            assert served.status_code == 200, served.text
            library = compose(org, template, view)
            expected = library.to_response()
            answer = served.json()
            for key in ("combinedSpec", "combinedMasterSpec", "runnable"):
                assert answer.get(key) == expected.get(key), (view, template.name, key)
            manifests = client.get(f"{base}/manifests", params=params)
            assert manifests.status_code == 200, manifests.text
            objects = list(library.manifests.objects) if library.manifests is not None else []
            assert manifests.json()["objects"] == objects, (view, template.name)
            assert manifests.json()["runnable"] == expected["runnable"], (view, template.name)
            compared += 1
        assert compared == len(org.views()) and compared >= 4
        if which == "every-kind":  # east's policy refuses the wide template, naming its file and line
            template_id, _ = templates[("system", "wide")]
            base = f"/api/v1/workload-templates/distributed/{template_id}"
            runnable = {
                name: client.get(base, params={"projectId": str(projects[name])}).json()["runnable"]
                for name in ("vision", "recsys")
            }
            assert runnable["recsys"]["isRunnable"] and not runnable["vision"]["isRunnable"]
            sources = {issue.get("source") for issue in runnable["vision"]["issues"]}
            assert "clusters/east/policy.yaml:5" in sources, sources
        if which == "two-clusters":
            _the_cluster_layer_is_its_own(client, templates, projects)


def _the_cluster_layer_is_its_own(
    client: Any, templates: dict[tuple[str, str], tuple[str, str]], projects: dict[str, int]
) -> None:
    """examples/two-clusters: dgx-east's defaults (its H100 pool, its datasets) and policy reach vision and
    nlp, not recsys; each pair's objects are in its own cluster's namespace with its priority classes."""
    template_id, _ = templates[("system", "pytorch-ddp")]
    base = f"/api/v1/workload-templates/distributed/{template_id}"
    seen = {name: client.get(base, params={"projectId": str(projects[name])}).json() for name in projects}
    objects = {
        name: client.get(f"{base}/manifests", params={"projectId": str(projects[name])}).json()["objects"]
        for name in projects
    }
    assert seen["vision"]["combinedSpec"]["nodePools"] == ["h100"]
    assert seen["nlp"]["combinedSpec"]["nodePools"] == ["h100"]
    assert seen["recsys"]["combinedSpec"]["nodePools"] == ["default"]
    imposed = {name: "nfs.east.internal" in json.dumps(found["combinedSpec"]) for name, found in seen.items()}
    assert imposed == {"vision": True, "nlp": True, "recsys": False}  # dgx-east's policy imposes its datasets
    text = {name: json.dumps(found) for name, found in objects.items()}
    for name, namespace, classes in (
        ("vision", "east-vision", ("scavenger", "reserved")),
        ("nlp", "east-nlp", ("scavenger", "reserved")),
        ("recsys", "west-recsys", ("spot", "on-demand")),
    ):
        namespaces = {o["metadata"].get("namespace") for o in objects[name] if "metadata" in o}
        assert namespaces == {namespace}, (name, namespaces)
        assert any(f'"priorityClassName": "{c}"' in text[name] for c in classes), name
        others = {"scavenger", "reserved", "spot", "on-demand"} - set(classes)
        assert not any(f'"priorityClassName": "{c}"' in text[name] for c in others), name


def test_an_org_without_clusters_exports_as_before(sqlite_url: str, tmp_path: Path) -> None:
    """Nothing of the clusters is written for a database that has none: no clusters/ folder, no new key in
    the bookkeeping, the summary as before."""
    engine = _engine(sqlite_url)
    import_folder(engine, REPO / "templates")
    report = export_folder(engine, tmp_path / "out")
    engine.dispose()
    assert report.summary().startswith("2 departments, 4 projects")
    assert not (tmp_path / "out/clusters").exists() and (tmp_path / "out/cluster.yaml").is_file()
    meta = yaml.safe_load((tmp_path / "out" / META_FILE).read_text())
    assert list(meta) == [
        "format",
        "schemaVersion",
        "sequences",
        "departments",
        "projects",
        "files",
        "workloads",
    ]
    assert list(meta["sequences"]) == ["departments", "projects"]
    assert all("cluster" not in entry for entry in meta["departments"])
    assert list(yaml.safe_load((tmp_path / "out/org.yaml").read_text())) == ["departments"]
