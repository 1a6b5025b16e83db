"""The placeholder auth file of ``deploy/kubernetes/secret.example.yaml`` starts a server that nobody can sign
in to: applied as it is, the Deployment fails closed (every API request 401), not open."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import ADMIN, open_client

from template_engine.service.app import create_app
from template_engine.service.settings import Settings

SECRETS = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "secret.example.yaml"


def test_the_example_auth_file_is_valid_and_lets_nobody_in(tmp_path: Path) -> None:
    (secret,) = [
        s for s in yaml.safe_load_all(SECRETS.read_text()) if s["metadata"]["name"] == "template-engine-auth"
    ]
    auth_file = tmp_path / "auth.yaml"
    auth_file.write_text(secret["stringData"]["auth.yaml"], encoding="utf-8")
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite'}", auth_file=auth_file))
    with open_client(app, token=ADMIN) as client:
        assert client.get("/health").status_code == 200
        assert client.get("/api/v1/workload-templates").status_code == 401
    with open_client(app, token="dev-admin") as client:
        assert client.get("/api/v1/workload-templates").status_code == 401
