"""Production mode refuses to start with insecure settings."""
import subprocess

import pytest

from testkit.django_process import GOOD_KEY, PRODUCTION, django_process, django_probe


def start(environment: dict) -> subprocess.CompletedProcess:
    return django_probe("print('started')", environment)


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = start({"DJANGO_ENV": "production", "ALLOWED_HOSTS": "mail.example.com", "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "needs SECRET_KEY" in result.stderr


def test_production_refuses_to_start_without_allowed_hosts(tmp_path):
    result = start({"DJANGO_ENV": "production", "SECRET_KEY": GOOD_KEY, "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "needs ALLOWED_HOSTS" in result.stderr


def test_production_refuses_debug(tmp_path):
    result = start({"DJANGO_ENV": "production", "SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "mail.example.com",
                    "DEBUG": "true", "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "DEBUG must be off" in result.stderr


def test_production_refuses_to_start_without_a_field_encryption_key(tmp_path):
    result = start({"DJANGO_ENV": "production", "SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "mail.example.com",
                    "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "needs FIELD_ENCRYPTION_KEY" in result.stderr


def test_production_starts_with_real_settings(tmp_path):
    result = start({**PRODUCTION, "DATA_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"


@pytest.mark.parametrize("provider, message", [
    ("local", "local provider is refused when DJANGO_ENV=production"),
    ("usd=stripe", "local provider is refused"),  # NGN would still be local
    ("usd=stripe,ngn=bitcoin", "unknown provider 'bitcoin' for ngn"),
    ("eur=stripe", "unknown currency"),
])
def test_production_refuses_the_local_payment_provider(tmp_path, provider, message):
    result = start({**PRODUCTION, "PAYMENT_PROVIDER": provider, "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0 and message in result.stderr


def test_a_provider_without_its_keys_fails_loudly(tmp_path):
    result = start({**PRODUCTION, "STRIPE_API_KEY": "", "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0 and "set STRIPE_API_KEY and STRIPE_WEBHOOK_SECRET" in result.stderr


def test_a_bad_boolean_fails_loudly(tmp_path):
    result = start({"DEBUG": "maybe", "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr


def test_production_answers_carry_hsts_cookies_are_secure_and_plain_http_is_redirected(tmp_path):
    probe = ("from django.conf import settings\n"
             "from django.test import Client\n"
             "client = Client()\n"
             "answer = client.get('/contacts', secure=True, HTTP_HOST='mail.example.com')\n"
             "plain = client.get('/contacts', HTTP_HOST='mail.example.com')\n"
             "print(answer.status_code, answer['Strict-Transport-Security'], settings.SESSION_COOKIE_SECURE,\n"
             "      settings.CSRF_COOKIE_SECURE, plain.status_code, plain['Location'])\n")
    result = django_probe(probe, {**PRODUCTION, "DATA_DIR": str(tmp_path)})

    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["401", "max-age=31536000;", "includeSubDomains", "True", "True", "301",
                                     "https://mail.example.com/contacts"]


def test_manage_py_check_deploy_is_clean_with_production_settings(tmp_path):
    result = django_process(["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            {**PRODUCTION, "DATA_DIR": str(tmp_path)}, timeout=120)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
