"""The real background worker (`manage.py worker`) as a separate process on the test database, so a
test can kill it with SIGKILL in the middle of its work and start it again.

The test must be transactional (its rows committed where the child reads them). On SQLite the
test database is a file (conftest.py) that the child opens through DATABASE_URL; on PostgreSQL the
child connects to the same test database by name."""
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def database_url() -> str:
    """The test database as a DATABASE_URL the child process understands."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        name = str(db["NAME"])
        if name == ":memory:" or "mode=memory" in name:
            raise RuntimeError("a worker process cannot share an in-memory SQLite database")
        return f"sqlite:///{Path(name).resolve()}"
    if db["ENGINE"] == "django.db.backends.postgresql":
        credentials = quote(db["USER"] or "")
        if db.get("PASSWORD"):
            credentials += ":" + quote(db["PASSWORD"])
        host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
        return f"postgres://{credentials}@{host}/{db['NAME']}"
    raise RuntimeError(f"no worker process for {db['ENGINE']}")


EMBEDDED_WORKER = ["manage.py", "worker"]
# Celery's worker with beat in one process group, as production runs them (compose runs two).
CELERY_WORKER = ["-m", "celery", "-A", "config", "worker", "--beat", "--loglevel", "WARNING", "--concurrency", "2"]
# A Redis database of its own per pytest-xdist worker (gw0 -> 7, gw1 -> 8, ...), emptied when a
# worker process first starts.
CELERY_TEST_REDIS = f"redis://127.0.0.1:6379/{7 + int(os.environ.get('PYTEST_XDIST_WORKER', 'gw0')[2:])}"


class WorkerProcess:
    """`python manage.py worker` (or, with command=CELERY_WORKER, a Celery worker and beat on
    CELERY_TEST_REDIS) with its own DATA_DIR (its own cache, so its sweep locks are its own: two
    of them really run the same jobs at the same time) and the given settings."""

    def __init__(self, data_dir: Path, command: list[str] = EMBEDDED_WORKER, **environment: str):
        self.command = command
        if command is CELERY_WORKER:
            environment = {"REDIS_URL": CELERY_TEST_REDIS, **environment}
            self.command = [*command, "--schedule", str(Path(data_dir) / "celerybeat-schedule")]
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DATA_DIR": str(self.data_dir),
                            "DATABASE_URL": database_url(), "SWEEP_INTERVAL_SECONDS": "1",
                            "DB_CONN_MAX_AGE": "0", **environment}
        self.process: subprocess.Popen | None = None
        self.log = self.data_dir / "worker.log"
        self.starts = 0

    def start(self) -> "WorkerProcess":
        assert self.process is None or self.process.poll() is not None, "already running"
        self.starts += 1
        if "REDIS_URL" in self.environment and self.starts == 1:
            import redis

            redis.Redis.from_url(self.environment["REDIS_URL"]).flushdb()  # no task of an earlier test
        with open(self.log, "a") as log:
            self.process = subprocess.Popen([sys.executable, *self.command], cwd=ROOT, env=self.environment,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def kill(self) -> None:
        """SIGKILL to the worker and its part processes (WORKER_PROCESSES): no handler runs, no
        transaction commits, nothing is cleaned up."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM and up to 30 s for a warm shutdown; then whatever of its process group is left
        (Celery's pool and beat children outlive a main process that was killed) gets SIGKILL."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


def wait_until(condition, *, timeout: float = 60, every: float = 0.01, what: str = "the condition",
               workers=()) -> None:
    """Poll `condition` until it is true; fail with the workers' output after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            logs = "\n".join(worker.output()[-3000:] for worker in workers)
            raise AssertionError(f"timed out waiting for {what}\n{logs}")
        time.sleep(every)
