"""``db export`` then ``db import`` as a lossless migration, from SQLite to PostgreSQL and back.

The database that comes back is compared with the one exported row by row, every column of every table,
with the id counters; values that some database cannot store or that would not read back are refused with
their file (or record) and field before anything is written; an export replaces the previous one whole or not
at all; a broken ``--seed`` leaves no database behind.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import CLUSTER, TEMPLATES, VISION, MakeApp, bearer, open_client
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, delete, insert, inspect, select, update

from template_engine.cli import main
from template_engine.errors import InputError
from template_engine.loader.yaml_safe import load_yaml
from template_engine.service import exporter
from template_engine.service.bookkeeping import META_FILE
from template_engine.service.exporter import export_folder
from template_engine.service.importer import import_folder
from template_engine.service.storage import snapshot
from template_engine.service.storage import tables as t
from template_engine.service.storage.database import create_db_engine, ensure_schema, transaction
from template_engine.service.storage.repository import DEPARTMENTS, Repository

ORG = "/api/v1/org-unit"
TEMPLATES_URL = "/api/v1/workload-templates/distributed"
WORKLOADS = "/api/v1/workloads/distributed"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def _engine(url: str) -> Engine:
    engine = create_db_engine(url)
    ensure_schema(engine)
    return engine


def _dump(url: str) -> dict[str, Any]:
    """Every row of every table, every column (documents as their JSON text: key order counts), by primary
    key; and the id counters."""
    engine = _engine(url)
    out: dict[str, Any] = {}
    with transaction(engine, write=False) as connection:
        for table in t.metadata.sorted_tables:
            rows = connection.execute(select(table).order_by(*table.primary_key.columns))
            out[table.name] = [
                {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in row._mapping.items()}
                for row in rows
            ]
        out["counters"] = [snapshot.high_water(connection, table) for table in snapshot.COUNTED]
    engine.dispose()
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _populate(make_app: MakeApp, url: str) -> None:
    """The example org, then what the API does to a database over time: edits by several people, a deleted
    department (its id must never come back), a project description, and workloads: running, stopped,
    deleted, and one whose project was deleted since."""
    with open_client(make_app(url)) as admin:
        ops = admin.post(f"{ORG}/departments", json={"name": "ops", "description": "operations"}).json()
        body = {"name": "batch", "parentId": int(ops["id"]), "description": "nightly batch jobs"}
        assert admin.post(f"{ORG}/projects", json=body).status_code == 201
        gone = admin.post(f"{ORG}/departments", json={"name": "short-lived"}).json()
        assert admin.delete(f"{ORG}/departments/{gone['id']}").status_code == 204
        created = admin.post(
            TEMPLATES_URL,
            json={
                "meta": {"name": "extra", "scopeType": "system"},
                "spec": {"image": "x:1", "numWorkers": 2},
            },
        ).json()
        patched = admin.patch(f"{TEMPLATES_URL}/{created['meta']['id']}", json={"spec": {"numWorkers": 3}})
        assert patched.status_code == 200
        admin.patch("/api/v1/defaults/system", json={"spec": {"backoffLimit": 7}})
        projects = {p["name"]: p["id"] for p in admin.get(f"{ORG}/projects").json()["projects"]}
        carol = bearer(VISION)
        vit = next(
            e["meta"]["id"]
            for e in admin.get(TEMPLATES_URL, params={"limit": 500}).json()["entries"]
            if e["meta"]["name"] == "vit-finetune"
        )
        edited = admin.patch(
            f"{TEMPLATES_URL}/{vit}", json={"meta": {"description": "by carol"}}, headers=carol
        )
        assert edited.status_code == 200, edited.json()

        def submit(project: str, name: str, headers: dict[str, str] | None = None) -> str:
            spec = {"image": "x:1", "distributedFramework": "MPI"}
            body = {"name": name, "projectId": projects[project], "clusterId": CLUSTER, "spec": spec}
            response = admin.post(WORKLOADS, json=body, headers=headers or {})
            assert response.status_code == 202, response.json()
            workload_id: str = response.json()["workloadId"]
            return workload_id

        submit("vision", "running", carol)
        admin.post(f"{WORKLOADS}/{submit('vision', 'stopped', carol)}/suspend")
        admin.delete(f"{WORKLOADS}/{submit('nlp', 'deleted')}")
        admin.delete(f"{WORKLOADS}/{submit('recsys', 'orphan')}")
        assert admin.delete(f"{ORG}/projects/{projects['recsys']}").status_code == 204


@pytest.mark.parametrize(("source", "target"), [("sqlite", "postgresql"), ("postgresql", "sqlite")])
def test_export_then_import_gives_back_the_same_database(
    make_app: MakeApp,
    runner: CliRunner,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    source: str,
    target: str,
) -> None:
    urls = {
        "sqlite": f"sqlite:///{tmp_path / 'service.db'}",
        "postgresql": request.getfixturevalue("postgres_url"),
    }
    _populate(make_app, urls[source])
    before = _dump(urls[source])
    assert len(before["workloads"]) == 4 and before["counters"] == [4, 5]

    out = tmp_path / "export"
    exported = runner.invoke(main, ["db", "export", "--root", str(out), "--database-url", urls[source]])
    assert exported.exit_code == 0, exported.output
    assert runner.invoke(main, ["validate", "--root", str(out)]).exit_code == 0

    imported = runner.invoke(main, ["db", "import", "--root", str(out), "--database-url", urls[target]])
    assert imported.exit_code == 0, imported.output
    assert _dump(urls[target]) == before
    assert "3 departments, 4 projects" in exported.output and "4 workloads" in exported.output
    assert (out / META_FILE).is_file()
    assert "4 added workloads; ids, versions and audit fields restored" in imported.output

    # And back: the same files, byte for byte.
    again = tmp_path / "again"
    result = runner.invoke(main, ["db", "export", "--root", str(again), "--database-url", urls[target]])
    assert result.exit_code == 0, result.output
    assert _files(again) == _files(out)

    # The id counters came along: the next department gets the same id on both (not a deleted one's).
    next_ids = []
    for url in (urls[source], urls[target]):
        engine = _engine(url)
        with transaction(engine, write=True) as connection:
            next_ids.append(Repository(connection).add_unit(DEPARTMENTS, "later", None, "test"))
        engine.dispose()
    assert next_ids == [5, 5]


def test_a_document_edited_after_the_export_keeps_its_id_and_gets_the_next_version(
    database_url: str, tmp_path: Path
) -> None:
    engine = _engine(database_url)
    import_folder(engine, TEMPLATES)
    out = tmp_path / "out"
    export_folder(engine, out)
    before = _dump(database_url)
    mpi = out / "system/templates/mpi-horovod.yaml"
    mpi.write_text(mpi.read_text().replace("description: Horovod", "description: Edited Horovod"))
    new = out / "system/templates/added.yaml"
    new.write_text("meta:\n  name: added\nspec:\n  image: x:1\n")
    with transaction(engine, write=True) as connection:
        t.metadata.drop_all(connection)
        connection.exec_driver_sql("DROP TABLE alembic_version")  # an empty database
    ensure_schema(engine)

    report = import_folder(engine, out)
    after = _dump(database_url)
    old = {r["name"]: r for r in before["templates"]}
    now = {r["name"]: r for r in after["templates"]}
    assert set(now) == {*old, "added"}
    edited, kept = now["mpi-horovod"], old["mpi-horovod"]
    assert (edited["id"], edited["created_by"], edited["created_at"]) == (
        kept["id"],
        kept["created_by"],
        kept["created_at"],
    )
    assert edited["version"] == kept["version"] + 1 and edited["updated_by"] == "import"
    assert "Edited Horovod" in edited["document"]
    for name in old.keys() - {"mpi-horovod"}:
        assert now[name] == old[name]
    assert now["added"]["version"] == 1 and now["added"]["id"] not in {r["id"] for r in old.values()}
    assert report is not None and report.restored and report.edited == 1
    engine.dispose()


def test_an_export_into_a_database_with_data_is_matched_by_name(
    make_app: MakeApp, database_url: str, tmp_path: Path
) -> None:
    _populate(make_app, database_url)
    out = tmp_path / "out"
    engine = _engine(database_url)
    export_folder(engine, out)
    engine.dispose()
    other = f"sqlite:///{tmp_path / 'other.db'}"
    engine = _engine(other)
    import_folder(engine, TEMPLATES)
    ids = {r["name"]: r["id"] for r in _dump(other)["templates"]}
    report = import_folder(engine, out)
    after = _dump(other)
    assert after["workloads"] == []
    assert {r["name"]: r["id"] for r in after["templates"] if r["name"] in ids} == ids
    batch = next(r for r in after["projects"] if r["name"] == "batch")
    assert batch["description"] == "nightly batch jobs"  # kept only in the bookkeeping
    assert report is not None and not report.restored
    assert "the export's 4 workloads were not imported" in report.summary()
    engine.dispose()


#: Valid values that a careless YAML writer, JSON column or database would change on the way.
AWKWARD = [
    "yes",
    "null",
    "~",
    "1e3",
    "0x1F",
    "010",
    "2024-01-01",
    ".inf",
    "- dash",
    "key: value",
    "# hash",
    "  spaces around  ",
    "multi\nline\n",
    "tab\there",
    "quotes ' and \"",
    "emoji \U0001f680 and \u00e9",
    "separators \u2028 \u2029 \x85",
    "bom \ufeff",
    "bell \x07 and escape \x1b",
    "backslash \\",
    "",
]


def test_valid_but_awkward_values_go_to_postgresql_and_back_unchanged(
    postgres_url: str, runner: CliRunner, tmp_path: Path
) -> None:
    folder = tmp_path / "folder"
    shutil.copytree(TEMPLATES, folder)
    document = {
        "meta": {"name": "awkward", "description": "caf\u00e9 \U0001f680"},
        "spec": {
            "image": "x:1",
            "command": "\n".join(AWKWARD),
            "args": "-0.0",
            "backoffLimit": 0,
            "compute": {"cpuCoreRequest": 0.1, "cpuCoreLimit": 1e-7},
            "environmentVariables": [{"name": f"V{i}", "value": v} for i, v in enumerate(AWKWARD)],
        },
    }
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    (folder / "system/templates/awkward.yaml").write_text(text, encoding="utf-8")
    assert runner.invoke(main, ["validate", "--root", str(folder)]).exit_code == 0
    sqlite = f"sqlite:///{tmp_path / 'first.db'}"
    back = f"sqlite:///{tmp_path / 'back.db'}"
    steps = [
        ("import", folder, sqlite),
        ("export", tmp_path / "a", sqlite),
        ("import", tmp_path / "a", postgres_url),
    ]
    steps += [("export", tmp_path / "b", postgres_url), ("import", tmp_path / "b", back)]
    steps += [("export", tmp_path / "c", back)]
    for command, root, url in steps:
        result = runner.invoke(main, ["db", command, "--root", str(root), "--database-url", url])
        assert result.exit_code == 0, result.output
    assert _dump(sqlite) == _dump(postgres_url) == _dump(back)
    assert _files(tmp_path / "a") == _files(tmp_path / "b") == _files(tmp_path / "c")
    stored = next(r for r in _dump(back)["templates"] if r["name"] == "awkward")
    assert json.loads(stored["document"]) == document


# -- values some database cannot store ----------------------------------------------------------------------

ODD_TEMPLATE = """\
meta:
  name: odd
  description: "nul\\0here"
spec:
  image: x:1
  environmentVariables:
  - name: TERMINATED
    value: "c-string\\0"
"""


def test_import_refuses_values_a_database_cannot_store_and_changes_nothing(
    database_url: str, runner: CliRunner, tmp_path: Path
) -> None:
    engine = _engine(database_url)
    import_folder(engine, TEMPLATES)
    before = _dump(database_url)
    folder = tmp_path / "odd"
    shutil.copytree(TEMPLATES, folder)
    (folder / "system/templates/odd.yaml").write_text(ODD_TEMPLATE)
    org = (folder / "org.yaml").read_text()
    (folder / "org.yaml").write_text(
        org.replace("- name: research\n", f"- name: research\n  description: {'x' * 300}\n", 1)
    )

    with pytest.raises(InputError) as caught:
        import_folder(engine, folder)
    found = {
        (p.location.file if p.location else None, str(p.render().splitlines()[1]))
        for p in caught.value.problems
    }
    assert ("system/templates/odd.yaml", "    at: meta.description") in found
    assert ("system/templates/odd.yaml", "    at: spec.environmentVariables[0].value") in found
    assert ("org.yaml", "    at: departments[0].description") in found
    text = caught.value.render()
    assert "NUL" in text and "at most 250 characters" in text
    assert "expected: text without NUL characters or lone surrogates" in text
    assert _dump(database_url) == before

    result = runner.invoke(main, ["db", "import", "--root", str(folder), "--database-url", database_url])
    assert result.exit_code == 2 and "nothing imported" in result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert _dump(database_url) == before
    engine.dispose()


# -- export: whole or nothing, and only what reads back -----------------------------------------------------


def _siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith("."))


def test_an_export_that_fails_half_way_leaves_the_previous_one(
    database_url: str, runner: CliRunner, tmp_path: Path
) -> None:
    engine = _engine(database_url)
    import_folder(engine, TEMPLATES)
    out = tmp_path / "out"
    assert (
        runner.invoke(main, ["db", "export", "--root", str(out), "--database-url", database_url]).exit_code
        == 0
    )
    previous = _files(out)
    long_name = "a" * 251  # stored by an older version (names are now at most 250): too long for a file
    with transaction(engine, write=True) as connection:
        document = {"meta": {"name": long_name}, "spec": {"image": "x:1"}}
        Repository(connection).add_template(str(uuid.uuid4()), "system", None, document, "test")
    engine.dispose()

    result = runner.invoke(
        main, ["db", "export", "--root", str(out), "--overwrite", "--database-url", database_url]
    )
    assert result.exit_code == 2
    assert _files(out) == previous
    assert _siblings(out) == []
    assert "nothing exported" in result.output and "File name too long" in result.output
    assert f"template '{long_name}' of system" in result.output
    assert "Traceback" not in result.output
    # Into a new folder: nothing is left, not even the folders above it that the export created.
    nested = tmp_path / "new" / "deeper" / "out"
    result = runner.invoke(main, ["db", "export", "--root", str(nested), "--database-url", database_url])
    assert result.exit_code == 2 and "File name too long" in result.output
    assert not (tmp_path / "new").exists()
    assert runner.invoke(main, ["validate", "--root", str(out)]).exit_code == 0


def test_an_export_refuses_what_would_not_read_back(database_url: str, tmp_path: Path) -> None:
    """Values written by older versions, straight into the tables: an export would write them as
    ``"\\uDFFF"``, ``"\\0"`` or ``.inf``, which no import takes back (SQLite stores an infinity, PostgreSQL
    does not)."""
    engine = _engine(database_url)
    import_folder(engine, TEMPLATES)
    out = tmp_path / "out"
    export_folder(engine, out)
    previous = _files(out)
    template_id, workload_id = str(uuid.uuid4()), str(uuid.uuid4())
    sqlite = database_url.startswith("sqlite")
    document = {
        "meta": {"name": "odd"},
        "spec": {"image": "x:1", "environmentVariables": [{"name": "A", "value": "\udfff"}]},
    }
    with transaction(engine, write=True) as connection:
        stamp = {
            "version": 1,
            "created_by": "old",
            "created_at": t.now(),
            "updated_by": "old",
            "updated_at": t.now(),
        }
        connection.execute(
            insert(t.templates).values(
                id=template_id,
                name="odd",
                scope_type="system",
                scope_key="system",
                document=document,
                **stamp,
            )
        )
        connection.execute(
            insert(t.workloads).values(
                id=workload_id,
                name="w",
                requested_name="w",
                project_id=1,
                cluster_id=CLUSTER,
                desired_phase="Running",
                master_same_as_worker=True,
                spec={"args": "a\x00b", "compute": {"cpuCoreLimit": float("inf")} if sqlite else {}},
                **stamp,
            )
        )
    with pytest.raises(InputError) as caught:
        export_folder(engine, out, overwrite=True)
    text = caught.value.render()
    assert f"template 'odd' of system ({template_id}) cannot be exported" in text
    assert "at: spec.environmentVariables[0].value" in text and "surrogate" in text
    assert f"workload 'w' ({workload_id}) cannot be exported" in text and "at: spec.args" in text
    assert not sqlite or "at: spec.compute.cpuCoreLimit" in text
    assert _files(out) == previous
    assert _siblings(out) == []
    with pytest.raises(InputError):
        export_folder(engine, tmp_path / "new")
    assert not (tmp_path / "new").exists() and _siblings(out) == []

    # Storable, but deeper than any import reads: refused when the written files are read back.
    deep: Any = 1
    for _ in range(70):
        deep = [deep]
    with transaction(engine, write=True) as connection:
        connection.execute(delete(t.templates).where(t.templates.c.id == template_id))
        connection.execute(update(t.workloads).values(spec={"deep": deep}))
    with pytest.raises(InputError) as caught:
        export_folder(engine, out, overwrite=True)
    text = caught.value.render()
    assert "nested deeper than 64 levels" in text and "at: workloads[0].spec.deep[0]" in text
    assert f"in: {META_FILE}:" in text
    assert _files(out) == previous
    assert _siblings(out) == []
    engine.dispose()


def test_replacing_an_export_is_undone_when_a_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last step, renames only, put back as it was when one of them fails (a full disk...)."""
    from template_engine.service import exporter

    target, staged = tmp_path / "out", tmp_path / ".out.export-test"
    for root, text in ((target, "old"), (staged, "new")):
        for name in ("org.yaml", "system/defaults.yaml", "assets/computes/a.yaml"):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
    (target / "README.md").write_text("kept")
    previous = _files(target)
    rename = Path.rename

    def failing(self: Path, to: Any) -> Path:
        if self.parent == staged and self.name == "org.yaml":
            raise OSError(28, "No space left on device")
        return rename(self, to)

    monkeypatch.setattr(Path, "rename", failing)
    with pytest.raises(OSError, match="No space left"):
        exporter._replace(target, staged)
    monkeypatch.undo()
    assert _files(target) == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.export-test", "out"]  # the caller removes it
    exporter._replace(target, staged)
    assert _files(target) == {
        "README.md": b"kept",
        "assets/computes/a.yaml": b"new",
        "org.yaml": b"new",
        "system/defaults.yaml": b"new",
    }


# -- serve --seed: a broken folder leaves no database -------------------------------------------------------


def _broken_seed(tmp_path: Path) -> Path:
    seed = tmp_path / "seed"
    shutil.copytree(TEMPLATES, seed)
    (seed / "system/templates/bad.yaml").write_text("meta:\n  name: bad\nspec:\n  numWorkers: lots\n")
    return seed


def test_serve_with_a_broken_seed_creates_no_database(
    runner: CliRunner, auth_file: Path, tmp_path: Path, database_url: str
) -> None:
    sqlite = database_url.startswith("sqlite")
    url = f"sqlite:///{tmp_path / 'new/folder/x.db'}" if sqlite else database_url
    args = [
        "serve",
        "--database-url",
        url,
        "--auth-file",
        str(auth_file),
        "--seed",
        str(_broken_seed(tmp_path)),
    ]
    result = runner.invoke(main, args)
    assert result.exit_code == 2
    assert "cannot seed" in result.output and "system/templates/bad.yaml" in result.output
    if sqlite:
        assert not (tmp_path / "new").exists()
    else:
        engine = create_db_engine(url)
        assert inspect(engine).get_table_names() == []
        engine.dispose()


def test_serve_removes_the_sqlite_file_it_created_when_the_seed_fails_in_the_database(
    runner: CliRunner, auth_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy.exc import OperationalError

    from template_engine.service import importer

    def failing(*_args: Any, **_kwargs: Any) -> None:
        raise OperationalError("INSERT INTO templates ...", {}, Exception("disk I/O error"))

    monkeypatch.setattr(importer, "seed_if_empty", failing)
    url = f"sqlite:///{tmp_path / 'new/x.db'}"
    args = ["serve", "--database-url", url, "--auth-file", str(auth_file), "--seed", str(TEMPLATES)]
    result = runner.invoke(main, args)
    assert result.exit_code == 2 and "disk I/O error" in result.output
    assert not (tmp_path / "new").exists()
    # A database that existed before is never removed.
    existing = tmp_path / "kept.db"
    _engine(f"sqlite:///{existing}").dispose()
    args[2] = f"sqlite:///{existing}"
    assert runner.invoke(main, args).exit_code == 2
    assert existing.is_file()


# -- text that a YAML writer could change on the way --------------------------------------------------------

#: Text every write takes, which an export must give back as it was: NEL, LS and PS (which a YAML reader takes
#: for line breaks), tabs, carriage returns, emoji, right-to-left and zero-width marks, and other characters
#: that are not printable.
UNUSUAL = [
    "a\u0085b",
    "\u0085",
    "ends with NEL\u0085",
    " \u0085 ",
    "a\n\u0085b\n",
    "line\u2028separator",
    "\u2028",
    "para\u2029graph\u2029",
    "all three \u0085\u2028\u2029 then\nnewline",
    "tab\tinside\t",
    "\t",
    "cr\rinside",
    "\r\n",
    "emoji \U0001f680 \U0001f44d\U0001f3fd \U0001f1eb\U0001f1f7",
    "rtl \u200f\u05e9\u05dc\u05d5\u05dd\u200e and \u202eoverride\u202c",
    "zero\u200bwidth\u200c\u200d\u2060joiners",
    "\ufeffbom first",
    "nbsp\u00a0ideographic\u3000space",
    "soft\u00adhyphen, combining e\u0301",
    "private \ue000, non-characters \ufffe\uffff, tag \U000e0041",
    "del\x7f esc\x1b[0m bell\x07",
]


def _unusual_org(client: Any) -> None:
    """Every kind of record the API writes, each holding every text of :data:`UNUSUAL` where text goes."""
    description = "|".join(UNUSUAL)[:250]
    env = [{"name": f"V{i}\u0085{text}", "value": text} for i, text in enumerate(UNUSUAL)]
    # What a workload runs holds the odd text in values only: Kubernetes takes any text there, while a
    # variable named with a line separator is a name the cluster refuses (not runnable, never stored).
    valued = [{"name": f"V{i}", "value": text} for i, text in enumerate(UNUSUAL)]
    dept = client.post(f"{ORG}/departments", json={"name": "odd-text", "description": description})
    assert dept.status_code == 201, dept.json()
    body = {"name": "odd-project", "parentId": dept.json()["id"], "description": description[::-1]}
    project = client.post(f"{ORG}/projects", json=body)
    assert project.status_code == 201, project.json()
    asset = {
        "meta": {"name": "odd-env", "description": description, "scope": "tenant"},
        "spec": {"image": "x:1"},
    }
    asset["spec"] |= {"args": "\u0085".join(UNUSUAL), "environmentVariables": env}
    assert client.post("/api/v1/asset/environment", json=asset).status_code == 202
    spec = {"image": "x:1", "distributedFramework": "MPI", "command": "\u2028".join(UNUSUAL)}
    spec |= {"args": "a\u0085b", "environmentVariables": env}
    body = {"meta": {"name": "odd-text", "scopeType": "system", "description": description}, "spec": spec}
    body["assets"] = {"environment": "odd-env"}
    template = client.post(TEMPLATES_URL, json=body)
    assert template.status_code == 202, template.json()
    patched = client.patch("/api/v1/defaults/system", json={"spec": {"environmentVariables": valued[:3]}})
    assert patched.status_code == 200, patched.json()
    for name, args in (("kept", "a\u0085b"), ("gone", "\u0085")):
        body = {"name": name, "projectId": project.json()["id"], "clusterId": CLUSTER}
        body["spec"] = {
            "image": "x:1",
            "distributedFramework": "MPI",
            "args": args,
            "environmentVariables": valued,
        }
        workload = client.post(WORKLOADS, json=body)
        assert workload.status_code == 202, workload.json()
    gone = workload.json()["workloadId"]
    assert client.delete(f"{WORKLOADS}/{gone}").status_code == 202


def test_text_with_line_separators_and_invisible_characters_is_exported_and_imported_as_it_was(
    make_app: MakeApp,
    runner: CliRunner,
    database_url: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """An accepted ``"args": "a\\u0085b"`` used to stop every export of the org, even once deleted."""
    with open_client(make_app(database_url)) as admin:
        _unusual_org(admin)
    before = _dump(database_url)
    out = tmp_path / "out"
    exported = runner.invoke(main, ["db", "export", "--root", str(out), "--database-url", database_url])
    assert exported.exit_code == 0, exported.output
    assert "2 workloads" in exported.output
    assert runner.invoke(main, ["validate", "--root", str(out)]).exit_code == 0
    for rel, data in _files(out).items():  # the separators are written as escapes, never as line breaks
        text = data.decode("utf-8")
        assert not {"\u0085", "\u2028", "\u2029", "\r"} & set(text), rel

    other = request.getfixturevalue("postgres_url" if database_url.startswith("sqlite") else "sqlite_url")
    imported = runner.invoke(main, ["db", "import", "--root", str(out), "--database-url", other])
    assert imported.exit_code == 0, imported.output
    assert _dump(other) == before
    again = tmp_path / "again"
    result = runner.invoke(main, ["db", "export", "--root", str(again), "--database-url", other])
    assert result.exit_code == 0, result.output
    assert _files(again) == _files(out)


#: Any text a write takes: every character but NUL and the surrogates, with the awkward ones more often.
_TEXT = st.text(
    st.one_of(
        st.sampled_from([*"\n\r\t \\\"'#:-{}[],&*!|>%@`?", *"".join(UNUSUAL)]),
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    ),
    max_size=40,
)
_DOCUMENTS = st.recursive(
    _TEXT | st.integers() | st.booleans() | st.none(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(document=st.dictionaries(_TEXT, _DOCUMENTS, max_size=4))
def test_the_export_writer_gives_back_any_text(document: dict[str, Any]) -> None:
    """What the export writes, read with the loader's own reader, is what was stored: keys and values."""
    text = exporter._yaml(exporter._File("system/defaults.yaml", "the defaults", document))
    assert load_yaml(text, "system/defaults.yaml").data == document
