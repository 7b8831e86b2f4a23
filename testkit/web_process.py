"""The web app as production serves it (gunicorn with gunicorn.conf.py, sync workers) as a separate
process on the test database, so a test can kill it with SIGKILL in the middle of its requests and
start it again. Like WorkerProcess, the test must be transactional."""
import time
from pathlib import Path

import httpx

from testkit.smtp_sink import free_port
from testkit.worker_process import WorkerProcess


class WebProcess(WorkerProcess):
    """gunicorn on 127.0.0.1 at a port of its own (kept across restarts), WEB_CONCURRENCY processes;
    `kill()` is SIGKILL to the master and every one of its workers, mid-request."""

    def __init__(self, data_dir: Path, *, processes: int = 2, **environment: str):
        self.port = free_port()
        command = ["-m", "gunicorn", "config.wsgi:application", "--config", "gunicorn.conf.py",
                   "--bind", f"127.0.0.1:{self.port}"]
        super().__init__(data_dir, command, WEB_CONCURRENCY=str(processes), **environment)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self, *, wait: bool = True) -> "WebProcess":
        """Started, and (unless `wait` is false: see wait_answering) answering HTTP."""
        super().start()
        if wait:
            self.wait_answering()
        return self

    def wait_answering(self, *, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not self._answers():
            if not self.alive() or time.monotonic() > deadline:
                raise AssertionError(f"the web server did not answer\n{self.output()[-3000:]}")
            time.sleep(0.1)

    def _answers(self) -> bool:
        try:
            httpx.head(self.url("/"), timeout=5)
            return True
        except httpx.HTTPError:
            return False
