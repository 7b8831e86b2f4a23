"""docker/compose.yaml as `docker compose config` reads it (docker-compose's own parser; no Docker
engine is needed): every service the production layout names, health checks on the long-running
ones, named volumes, and no default password (a missing one stops it, named)."""
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

DOCKER = Path(__file__).resolve().parents[2] / "docker"
SECRETS = "SECRET_KEY=s\nPOSTGRES_PASSWORD=p\nDOVECOT_MASTER_PASSWORD=m\nPOSTFIX_DB_PASSWORD=f\n"


def config(tmp_path: Path, env: str) -> subprocess.CompletedProcess:
    copy = tmp_path / "docker"
    shutil.copytree(DOCKER, copy)
    (copy / ".env").write_text(env)
    binary = shutil.which("docker-compose")
    assert binary, "docker-compose is installed by scripts/install-system-deps.sh"
    return subprocess.run([binary, "-f", "compose.yaml", "config"], cwd=copy, capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"})


def test_the_compose_file_is_valid_with_health_checks_and_named_volumes(tmp_path):
    result = config(tmp_path, SECRETS)
    assert result.returncode == 0, result.stderr
    compose = yaml.safe_load(result.stdout)

    services = compose["services"]
    assert set(services) == {"web", "worker", "inbound", "submission-intake", "dovecot", "postfix", "caddy",
                             "postgres", "redis"}
    assert {name for name, service in services.items() if "healthcheck" in service} >= {
        "web", "worker", "inbound", "submission-intake", "dovecot", "postgres", "redis"}
    assert "ports" not in services["submission-intake"]  # it trusts the envelope sender: Postfix's only
    assert services["dovecot"]["environment"]["DOVECOT_MASTER_NETS"] == compose["networks"]["default"]["ipam"][
        "config"][0]["subnet"]  # master logins from the services' network only
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    assert set(compose["volumes"]) == {"caddy", "data", "mail", "pg", "postfix-queue", "redis"}
    assert services["postfix"]["build"]["context"].endswith("docker/postfix")  # our image, from the tested files
    assert services["web"]["environment"]["DATABASE_URL"] == "postgres://mailwell:p@postgres:5432/mailwell"


@pytest.mark.parametrize("missing", ["POSTGRES_PASSWORD", "DOVECOT_MASTER_PASSWORD", "POSTFIX_DB_PASSWORD"])
def test_a_missing_password_stops_it_by_name(tmp_path, missing):
    env = "".join(line + "\n" for line in SECRETS.splitlines() if not line.startswith(missing))
    result = config(tmp_path, env)
    assert result.returncode != 0 and f"set {missing} in docker/.env" in result.stderr
