"""The public address links point at: `make run` on another port (PORT=...) gives checkout links and system
mails on that port; production refuses to start without PUBLIC_BASE_URL. Each case is a fresh process
with its own environment, as `make run` starts one."""
import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from testkit.django_process import NOT_INHERITED, PRODUCTION, ROOT, django_probe, django_process
from testkit.smtp_sink import free_port


def test_production_refuses_to_start_without_a_public_address(tmp_path):
    environment = {**PRODUCTION, "DATA_DIR": str(tmp_path)}
    del environment["PUBLIC_BASE_URL"]
    result = django_probe("print('started')", environment)
    assert result.returncode != 0
    assert "needs PUBLIC_BASE_URL" in result.stderr


def test_a_public_address_with_a_path_is_refused(tmp_path):
    result = django_probe("print('started')", {"PUBLIC_BASE_URL": "https://mail.example.com/app",
                                               "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "PUBLIC_BASE_URL must be a scheme and host" in result.stderr


@pytest.mark.parametrize("environment, expected", [
    ({"PORT": "9000"}, "http://127.0.0.1:9000"),
    ({"HOST": "0.0.0.0", "PORT": "8123"}, "http://127.0.0.1:8123"),
    ({"HOST": "::", "PORT": "8123"}, "http://[::1]:8123"),
    ({}, "http://127.0.0.1:8000"),
    ({"PORT": "9000", "PUBLIC_BASE_URL": "https://mail.example.com/"}, "https://mail.example.com"),
])
def test_in_development_the_public_address_follows_host_and_port_unless_set(tmp_path, environment, expected):
    result = django_probe("from django.conf import settings; print(settings.PUBLIC_BASE_URL)",
                          {**environment, "DATA_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def _wait_for(url: str, server: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert server.poll() is None, "manage.py serve exited"
        try:
            urllib.request.urlopen(url, timeout=5)
            return
        except OSError:  # refused, reset or timed out while it starts
            time.sleep(0.3)
    pytest.fail(f"{url} did not answer within {seconds} s")


def _post_json(url: str, body: dict, token: str = "") -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def test_make_run_on_another_port_gives_checkout_links_and_approval_mails_on_that_port(tmp_path):
    """PORT=... make run: the customer's checkout link and the partner's approval mail name that port."""
    from mailcore.management.commands.seed_demo import APPLICANT

    port = free_port()
    base = {"DATA_DIR": str(tmp_path)}
    for step in (["manage.py", "migrate", "--noinput"], ["manage.py", "seed_demo"]):
        result = django_process(step, base, timeout=180)
        assert result.returncode == 0, result.stderr
    environment = {**base, "PORT": str(port), "LMTP_LISTEN": f"127.0.0.1:{free_port()}",
                   "SMTP_LISTEN": f"127.0.0.1:{free_port()}", "WORKER_PROCESSES": "1"}
    server = subprocess.Popen([sys.executable, "manage.py", "serve"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, start_new_session=True,
                              env={**_inherited(), **environment, "DJANGO_SETTINGS_MODULE": "config.settings"})
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_for(f"{url}/healthz", server)
        token = _post_json(f"{url}/auth/login", {"email": APPLICANT["email"], "password": APPLICANT["password"]})["token"]
        change = _post_json(f"{url}/subscriptions/me/plan",
                            {"plan": "pro", "currency": "usd", "return_url": f"{url}/portal/billing/"}, token)
        assert change["checkout_url"].startswith(f"{url}/"), change
        assert urllib.request.urlopen(change["checkout_url"], timeout=10).status == 200
    finally:
        server.terminate()
        server.wait(timeout=30)

    approval = django_probe(
        "from mailcore.partners.models import HostingPartner\n"
        "from billing.services.partners import partner_approve\n"
        f"partner_approve(partner=HostingPartner.objects.get(account__users__email={APPLICANT['email']!r}))\n",
        {**base, "PORT": str(port)})
    assert approval.returncode == 0, approval.stderr
    assert f"http://127.0.0.1:{port}/portal/billing/slots/" in approval.stdout


def _inherited() -> dict:
    return {name: value for name, value in os.environ.items() if name not in NOT_INHERITED}
