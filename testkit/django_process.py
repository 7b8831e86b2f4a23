"""The product's settings read in a fresh Python process, from an environment the test gives: how
production mode is checked (refusals at start, headers, `check --deploy`, JSON logs) without the
test process's own settings or the variables pytest plugins set leaking in."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOOD_KEY = "x" * 20 + "production-secret-key-for-this-test-only-0123456789"
PRODUCTION = {"DJANGO_ENV": "production", "SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "mail.example.com",
              "PUBLIC_BASE_URL": "https://mail.example.com", "SYSTEM_MAIL_DOMAIN": "example.com",
              "FIELD_ENCRYPTION_KEY": "bXVzdC1iZS0zMi11cmwtc2FmZS1iYXNlNjQtYnl0ZXM=",
              "PAYMENT_PROVIDER": "usd=stripe,ngn=paystack", "STRIPE_API_KEY": "sk_live_x",
              "STRIPE_WEBHOOK_SECRET": "whsec_x", "PAYSTACK_SECRET_KEY": "sk_live_y"}
# Settings the test run's environment may carry that would change what the process under test does
# (pytest-playwright sets DJANGO_ALLOW_ASYNC_UNSAFE, which `check --deploy` reports), and the run's own
# database and Redis: a process under test keeps its data in its DATA_DIR, never in the shared servers.
NOT_INHERITED = {"SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "DJANGO_ENV", "DJANGO_ALLOW_ASYNC_UNSAFE", "PUBLIC_BASE_URL", "HOST",
                 "SYSTEM_MAIL_DOMAIN", "DEFAULT_FROM_EMAIL", "DATABASE_URL", "REDIS_URL",
                 "PORT"}


def django_process(arguments: list[str], environment: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python <arguments>` in the project with this environment on top of the test run's."""
    env = {name: value for name, value in os.environ.items() if name not in NOT_INHERITED}
    env.update(environment, DJANGO_SETTINGS_MODULE="config.settings")
    return subprocess.run([sys.executable, *arguments], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def django_probe(code: str, environment: dict) -> subprocess.CompletedProcess:
    """Run `code` after django.setup() in a fresh process."""
    return django_process(["-c", "import django; django.setup()\n" + code], environment)
