"""`make run`: start everything the product needs on one machine and print how to use it, the
scanner included: a private rspamd from docker/rspamd/ unless RSPAMD_URL names one (said plainly
when it cannot be had: the product then runs with scanning off)."""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from mailcore.management.commands.seed_demo import APPLICANT, MAILBOX_PASSWORD, OPERATOR, PARTNER, PREMIUM
from protection.local_scanners import EmbeddedScanners, ScannerStartError, start_embedded, wait_for_rspamd


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

    def _scanners(self) -> EmbeddedScanners:
        if settings.RSPAMD_URL:
            return EmbeddedScanners(environment={}, notes=[f"Scanner: rspamd at {settings.RSPAMD_URL} (RSPAMD_URL)"])
        # RSPAMD_HS_CACHE_DIR: compiled Hyperscan databases shared between data directories (tests).
        hs_cache = os.environ.get("RSPAMD_HS_CACHE_DIR")
        return start_embedded(settings.DATA_DIR, redis_url=settings.REDIS_URL,
                              dns_nameservers=settings.DNS_NAMESERVERS, hs_cache_dir=Path(hs_cache) if hs_cache else None)

    def _report_when_ready(self, scanners: EmbeddedScanners) -> None:
        try:
            wait_for_rspamd(scanners.rspamd)
        except ScannerStartError as error:
            self.stderr.write(f"  Scanning is OFF: rspamd did not start ({str(error).splitlines()[0]}); inbound "
                              f"mail is deferred (451) until it runs. Log: {scanners.rspamd.process.log_path}")
            return
        viruses = "viruses (clamd)" if scanners.rspamd.clamd else "no virus scanning"
        self.stdout.write(f"  Scanning is on: rspamd answers (spam, sender authentication, learning, {viruses}).")

    def handle(self, *args, host: str, port: int, **options):
        scanners = self._scanners()
        # Each process reads its settings afresh: the public address (PUBLIC_BASE_URL, unless set) follows these.
        environment = {**os.environ, "HOST": host, "PORT": str(port), **scanners.environment}
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
            + "".join(f"  {note}\n" for note in scanners.notes)
            + f"{demo}"
            "  Stop with Ctrl-C.\n"
        )
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        if scanners.rspamd:
            threading.Thread(target=self._report_when_ready, args=(scanners,), daemon=True).start()
        exit_code = 0
        scanner_down_said = False
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    self.stderr.write(f"{name} exited with status {child.returncode}; stopping")
                    stopping, exit_code = True, 1
            if scanners.rspamd and not scanners.rspamd.process.alive() and not scanner_down_said:
                scanner_down_said = True
                self.stderr.write(f"  rspamd stopped (status {scanners.rspamd.process.popen.returncode}): inbound "
                                  f"mail is deferred (451) until it runs again. Log: {scanners.rspamd.process.log_path}")
            time.sleep(0.5)
        for child in children.values():
            if child.poll() is None:
                child.terminate()
        for child in children.values():
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
        scanners.stop()
        sys.exit(exit_code)
