"""docker/compose.yaml as `docker compose config` reads it (docker-compose's own parser; no Docker
engine is needed): every service the production layout names, health checks on the long-running
ones, named volumes, and no default password (a missing one stops it, named)."""
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

DOCKER = Path(__file__).resolve().parents[2] / "docker"
SECRETS = "SECRET_KEY=s\nPOSTGRES_PASSWORD=p\nDOVECOT_MASTER_PASSWORD=m\nPOSTFIX_DB_PASSWORD=f\nRSPAMD_PASSWORD=r\n"


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
    assert set(services) == {"web", "worker", "inbound", "submission-intake", "dovecot-relay", "dovecot", "postfix",
                             "caddy", "postgres", "redis", "rspamd", "rspamd-redis", "clamav", "mta-sts",
                             "unbound"}
    assert {name for name, service in services.items() if "healthcheck" in service} >= {
        "web", "worker", "inbound", "submission-intake", "dovecot-relay", "dovecot", "postgres", "redis", "rspamd", "rspamd-redis"}
    default_net = compose["networks"]["default"]["ipam"]["config"][0]
    # Master logins and trusted logins from the services' addresses, never from the gateway that
    # Docker's port proxy connects from.
    assert services["dovecot"]["environment"]["DOVECOT_MASTER_NETS"] == default_net["ip_range"] == "172.30.0.128/25"
    assert "login_trusted_networks = 172.30.0.128/25" in (DOCKER / "dovecot/dovecot.conf").read_text()


def test_only_postfix_reaches_the_submission_intake_and_dovecots_auth(tmp_path):
    """The intake trusts the envelope sender: it listens on an internal network of its own, at the
    address Postfix's main.cf names; Dovecot's auth listener likewise."""
    compose = yaml.safe_load(config(tmp_path, SECRETS).stdout)
    services, submission = compose["services"], compose["networks"]["submission"]
    on_submission = {name for name, service in services.items() if "submission" in (service.get("networks") or {})}
    intake = services["submission-intake"]["networks"]["submission"]["ipv4_address"]
    auth = services["dovecot"]["networks"]["submission"]["ipv4_address"]
    main_cf = (DOCKER / "postfix/main.cf").read_text()

    assert submission["internal"] is True and on_submission == {"postfix", "submission-intake", "dovecot",
                                                                 "dovecot-relay"}
    assert "ports" not in services["submission-intake"]
    assert f"--listen {intake}:10026" in services["submission-intake"]["command"]
    assert f"mailwell_submission_intake = inet:{intake}:10026" in main_cf
    assert f"smtpd_sasl_path = inet:{auth}:12345" in main_cf
    assert f"address = {auth}" in (DOCKER / "dovecot/dovecot.conf").read_text()
    # Dovecot's own mail (vacation replies) is signed by the app's relay for it before Postfix relays it.
    dovecot_relay = services["dovecot-relay"]["networks"]["submission"]["ipv4_address"]
    assert "ports" not in services["dovecot-relay"]
    assert f"--listen {dovecot_relay}:10027" in services["dovecot-relay"]["command"]
    assert f"submission_host = {dovecot_relay}:10027" in (DOCKER / "dovecot/dovecot.conf").read_text()
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    assert set(compose["volumes"]) == {"caddy", "clamav", "data", "mail", "pg", "postfix-queue", "redis", "rspamd",
                                       "rspamd-redis", "mta-sts"}
    assert services["postfix"]["build"]["context"].endswith("docker/postfix")  # our image, from the tested files
    assert services["web"]["environment"]["DATABASE_URL"] == "postgres://mailwell:p@postgres:5432/mailwell"


@pytest.mark.parametrize("missing", ["POSTGRES_PASSWORD", "DOVECOT_MASTER_PASSWORD", "POSTFIX_DB_PASSWORD",
                                     "RSPAMD_PASSWORD"])
def test_a_missing_password_stops_it_by_name(tmp_path, missing):
    env = "".join(line + "\n" for line in SECRETS.splitlines() if not line.startswith(missing))
    result = config(tmp_path, env)
    assert result.returncode != 0 and f"set {missing} in docker/.env" in result.stderr


def test_the_scanner_shares_the_apps_dns_setting_and_clamav_is_an_optional_profile(tmp_path):
    """rspamd resolves through DNS_NAMESERVERS as the app does; ClamAV starts only with its profile,
    and rspamd asks it only when CLAMD_SERVERS names it."""
    env = SECRETS + "DNS_NAMESERVERS=10.0.0.53\n"
    plain = yaml.safe_load(config(tmp_path / "plain", env).stdout)
    with_clamav = yaml.safe_load(config(tmp_path / "clamav", env + "CLAMD_SERVERS=clamav:3310\n").stdout)

    rspamd = plain["services"]["rspamd"]
    assert rspamd["environment"]["RSPAMD_DNS_NAMESERVERS"] == "10.0.0.53"
    assert rspamd["environment"]["RSPAMD_CONTROLLER_PASSWORD"] == plain["services"]["web"]["environment"]["RSPAMD_PASSWORD"]
    assert rspamd["environment"]["RSPAMD_CLAMD_SERVERS"] == ""
    assert "ports" not in rspamd and "ports" not in plain["services"]["rspamd-redis"]
    assert plain["services"]["inbound"]["environment"]["RSPAMD_URL"] == "http://rspamd:11333"
    assert plain["services"]["clamav"]["profiles"] == ["clamav"]  # started only with COMPOSE_PROFILES=clamav
    assert with_clamav["services"]["rspamd"]["environment"]["RSPAMD_CLAMD_SERVERS"] == "clamav:3310"


def test_postfix_asks_the_mta_sts_resolver_and_a_validating_resolver(tmp_path):
    """Outbound TLS (docs/deployment.md): main.cf's policy table is the mta-sts service (the postfix
    image running postfix-mta-sts-resolver with its config), and Postfix and the resolver ask unbound,
    at its fixed address, with trust-ad so glibc passes on DNSSEC's verdict."""
    compose = yaml.safe_load(config(tmp_path, SECRETS).stdout)
    services = compose["services"]
    main_cf = (DOCKER / "postfix/main.cf").read_text()
    resolver = (DOCKER / "postfix/mta-sts-daemon.yml").read_text()
    unbound = services["unbound"]["networks"]["default"]["ipv4_address"]

    assert "smtp_tls_policy_maps = socketmap:inet:mta-sts:8461:postfix" in main_cf
    assert "smtp_dns_support_level = dnssec" in main_cf and "smtp_tls_security_level = dane" in main_cf
    assert "port: 8461" in resolver and "mta-sts-daemon.yml" in (DOCKER / "postfix/Dockerfile").read_text()
    assert services["mta-sts"]["build"]["context"] == services["postfix"]["build"]["context"]
    assert services["mta-sts"]["entrypoint"] == ["mta-sts-daemon", "-c", "/etc/postfix/mailwell/mta-sts-daemon.yml"]
    assert "ports" not in services["mta-sts"] and "ports" not in services["unbound"]
    assert services["postfix"]["dns"] == services["mta-sts"]["dns"] == [unbound]
    assert services["postfix"]["dns_opt"] == ["trust-ad"]
    assert "auto-trust-anchor-file" in (DOCKER / "unbound/unbound.conf").read_text()
