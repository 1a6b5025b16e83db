"""A project's delete and the submissions to it serialize (issue 30), on PostgreSQL as on SQLite: a
deleted project has no live workload.  Each round makes a project, then starts its delete and several
submissions to it at once (a barrier), over two servers on one database; either the delete wins (204, and
every submission is refused: no workload of the project is live) or a submission does (the delete is a 409
naming the workloads, and the project stays)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from conftest import ADMIN, CLUSTER, MakeApp, bearer
from waiting import LIVE_TIMEOUT

ROUNDS, SUBMITTERS = 8, 6
U = "/api/v1/org-unit"
W = "/api/v1/workloads"


def test_a_deleted_project_has_no_live_workload(
    make_app: MakeApp, database_url: str, live_server: Any
) -> None:
    outcomes = []
    with live_server(make_app(database_url)) as one, live_server(make_app(database_url, seed=False)) as two:
        clients = [
            httpx.Client(base_url=server.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT)
            for server in (one, two)
        ]
        try:
            admin = clients[0]
            research = next(
                d["id"]
                for d in admin.get(f"{U}/departments").json()["departments"]
                if d["name"] == "research"
            )
            templates = admin.get("/api/v1/workload-templates/distributed", params={"limit": 500}).json()[
                "entries"
            ]
            template = next(
                t["meta"]["id"]
                for t in templates
                if t["meta"]["name"] == "pytorch-elastic" and t["meta"]["scopeType"] == "system"
            )
            for round_ in range(ROUNDS):
                made = admin.post(f"{U}/projects", json={"name": f"race-{round_}", "parentId": research})
                assert made.status_code == 201, made.text
                project = made.json()["id"]
                barrier = threading.Barrier(SUBMITTERS + 1)

                def submit(
                    n: int, project: str = project, barrier: threading.Barrier = barrier
                ) -> httpx.Response:
                    body = {
                        "name": f"job-{n}",
                        "projectId": project,
                        "clusterId": CLUSTER,
                        "templateId": template,
                    }
                    barrier.wait()
                    return clients[n % 2].post(f"{W}/distributed", json=body)

                def delete(project: str = project, barrier: threading.Barrier = barrier) -> httpx.Response:
                    barrier.wait()
                    return clients[1].delete(f"{U}/projects/{project}")

                with ThreadPoolExecutor(max_workers=SUBMITTERS + 1) as pool:
                    submitted = [pool.submit(submit, n) for n in range(SUBMITTERS)]
                    deleted = pool.submit(delete).result()
                    answers = [s.result() for s in submitted]
                accepted = [
                    a.json()["workloadId"] if "workloadId" in a.json() else a.json()["id"]
                    for a in answers
                    if a.status_code == 202
                ]
                assert all(a.status_code in (202, 400) for a in answers), [a.text for a in answers]
                live = [
                    w
                    for w in admin.get(W, params={"limit": 500}).json()["workloads"]
                    if w["projectId"] == project
                ]
                if deleted.status_code == 204:
                    assert accepted == [] and live == [], (round_, len(accepted), len(live))
                    assert admin.get(f"{U}/projects/{project}").status_code == 404
                else:
                    assert deleted.status_code == 409, deleted.text
                    assert accepted and len(live) == len(accepted), (round_, accepted, live)
                    assert admin.get(f"{U}/projects/{project}").status_code == 200
                outcomes.append((deleted.status_code, len(accepted)))
        finally:
            for client in clients:
                client.close()
    assert len(outcomes) == ROUNDS, outcomes
