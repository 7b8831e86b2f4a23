"""Production mode refuses to start with insecure settings."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOOD_KEY = "x" * 20 + "production-secret-key-for-this-test-only-0123456789"


def start(env_overrides: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "DJANGO_ENV"}}
    env.update(env_overrides, DJANGO_SETTINGS_MODULE="portal.settings")
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )


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
    result = start({"DJANGO_ENV": "production", "SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "mail.example.com",
                    "FIELD_ENCRYPTION_KEY": "bXVzdC1iZS0zMi11cmwtc2FmZS1iYXNlNjQtYnl0ZXM=", "DATA_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"


def test_a_bad_boolean_fails_loudly(tmp_path):
    result = start({"DEBUG": "maybe", "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr
