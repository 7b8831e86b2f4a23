"""`make run`: start everything the product needs on one machine and print how to use it."""
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand

from mailcore.management.commands.seed_demo import APPLICANT, MAILBOX_PASSWORD, OPERATOR, PARTNER, PREMIUM


class Command(BaseCommand):
    help = "Run the web server and the background worker until interrupted."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))

    def _processes(self, host: str, port: int) -> dict[str, list[str]]:
        python = sys.executable
        web = [
            python, "-m", "gunicorn", "config.wsgi:application",
            "--config", str(settings.BASE_DIR / "gunicorn.conf.py"), "--bind", f"{host}:{port}", "--access-logfile", "-",
        ]
        if settings.REDIS_URL:
            worker = [python, "-m", "celery", "-A", "config", "worker", "--beat", "--loglevel", "INFO"]
        else:
            worker = [python, "manage.py", "worker"]
        mail = [python, "manage.py", "mail_listener"]
        return {"web": web, "worker": worker, "mail": mail}

    def handle(self, *args, host: str, port: int, **options):
        # Each process reads its settings afresh: the public address (PUBLIC_BASE_URL, unless set) follows these.
        environment = {**os.environ, "HOST": host, "PORT": str(port)}
        children = {name: subprocess.Popen(cmd, env=environment) for name, cmd in self._processes(host, port).items()}
        url = f"http://{'127.0.0.1' if host in {'0.0.0.0', '::'} else host}:{port}/"
        demo = (
            f"  Log in as {PREMIUM['email']} / {PREMIUM['password']} (premium account)\n"
            f"         or {PARTNER['email']} / {PARTNER['password']} (hosting partner)\n"
            f"         or {APPLICANT['email']} / {APPLICANT['password']} (partner application, pending)\n"
            f"  Operator console: {url}admin/ as {OPERATOR['email']} / {OPERATOR['password']} "
            "(sets up an authenticator app first)\n"
            f"  Payments: the local test provider (Pay / Decline buttons, no money moves)\n"
            f"  Demo mailboxes' password: {MAILBOX_PASSWORD}\n"
            "  API keys: .venv/bin/python manage.py seed_demo --json\n"
        ) if not settings.PRODUCTION else f"  Operator console: {url}admin/ (no demo data in production)\n"
        self.stdout.write(
            "\n"
            f"  Mailwell is running at {url}\n"
            f"  API docs: {url}docs    OpenAPI: {url}openapi.json\n"
            f"  Data directory: {settings.DATA_DIR}\n"
            f"  Inbound mail (LMTP and SMTP): {settings.LMTP_LISTEN}; mail store: {settings.MAIL_STORE}\n"
            f"{demo}"
            "  Stop with Ctrl-C.\n"
        )
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        exit_code = 0
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    self.stderr.write(f"{name} exited with status {child.returncode}; stopping")
                    stopping, exit_code = True, 1
            time.sleep(0.5)
        for child in children.values():
            if child.poll() is None:
                child.terminate()
        for child in children.values():
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
        sys.exit(exit_code)
