"""docker/caddy/Caddyfile, run as it is by a real Caddy (Debian's) in front of the app on loopback:
a partner's verified webmail hostname gets a certificate on its first TLS handshake and is proxied
to the branded webmail; any other name gets no certificate at all; /internal/ never leaves the proxy."""
import os
import re
import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from webmail.branding import brand_update
from webmail.hostnames import webmail_hostname_check, webmail_hostname_claim
from webmail import hostnames

pytestmark = pytest.mark.django_db(transaction=True)
CADDYFILE = Path(django_settings.BASE_DIR) / "docker" / "caddy" / "Caddyfile"
WEBMAIL = "webmail.mailwell.test"


@pytest.fixture(autouse=True)
def _served_names_forgotten():
    """Each process keeps the served names for a second; a test starts from none (its database is new)."""
    hostnames._forget_locally()
    yield
    hostnames._forget_locally()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def caddy(live_server, tmp_path):
    """Caddy with the production Caddyfile: its own CA instead of Let's Encrypt, loopback ports,
    and the app (the live server) as its upstream and its on-demand TLS `ask`."""
    binary = shutil.which("caddy")
    assert binary, "Caddy is installed by scripts/install-system-deps.sh"
    https_port, http_port = free_port(), free_port()
    env = {**os.environ, "CADDY_EXTRA_GLOBAL": "local_certs", "CADDY_ADMIN": "off", "HTTPS_PORT": str(https_port),
           "HTTP_PORT": str(http_port), "APP_UPSTREAM": live_server.url.removeprefix("http://"),
           "WEBMAIL_HOST": WEBMAIL, "PORTAL_HOST": "portal.mailwell.test", "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)}
    log = open(tmp_path / "caddy.log", "w")
    process = subprocess.Popen([binary, "run", "--config", str(CADDYFILE), "--adapter", "caddyfile"], env=env,
                               stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", https_port), timeout=0.2).close()
            break
        except OSError:
            assert process.poll() is None, (tmp_path / "caddy.log").read_text()
            time.sleep(0.05)
    try:
        yield https_port, tmp_path / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def https_get(port: int, root: Path | None, name: str, path: str = "/") -> tuple[int, str]:
    """A request to Caddy on loopback for `name` (SNI and Host), trusting only Caddy's own root; with
    root None, any certificate at all is accepted (so a failed handshake means there was none)."""
    if root is None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cafile=str(root))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=name) as tls:
            tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
            received = b""
            while chunk := tls.recv(65536):
                received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    https_get.last_head = head.decode(errors="replace")
    return int(head.split()[1]), body.decode(errors="replace")


def test_only_a_verified_hostname_gets_a_certificate_and_the_branded_webmail(caddy, plans, alice, dns_zone, settings):
    https_port, root = caddy
    settings.WEBMAIL_HOST = WEBMAIL
    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    brand_update(partner=partner, brand_name="Acme Mail")
    row = webmail_hostname_claim(partner=partner, hostname="webmail.acme.test")

    with pytest.raises(ssl.SSLError, match="internal error"):  # claimed, not verified: the ask says no
        https_get(https_port, None, "webmail.acme.test")

    dns_zone.set("webmail.acme.test", "CNAME", WEBMAIL)
    webmail_hostname_check(hostname=row)
    status, body = https_get(https_port, root, "webmail.acme.test")  # verified against Caddy's CA
    assert status == 200 and "Acme Mail" in body and "Sign in to your mailbox" in body
    # Caddy gives each request an id; the app answers it back (and logs it)
    assert re.search(r"(?im)^x-request-id: [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\r?$",
                     https_get.last_head)

    with pytest.raises(ssl.SSLError, match="internal error"):
        https_get(https_port, None, "stranger.example")
    status, _ = https_get(https_port, root, "webmail.acme.test", "/internal/tls/allowed?domain=webmail.acme.test")
    assert status == 404  # the ask endpoint is not reachable from outside


def test_the_caddyfile_is_valid_as_production_reads_it():
    """`caddy validate` with production's environment (Let's Encrypt, ports 80 and 443)."""
    env = {**os.environ, "PORTAL_HOST": "mail.example.com", "WEBMAIL_HOST": "webmail.example.com",
           "ACME_EMAIL": "ops@example.com", "APP_UPSTREAM": "web:8000"}
    result = subprocess.run([shutil.which("caddy"), "validate", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "Valid configuration" in result.stdout + result.stderr, result.stderr
