"""Worker threads for the ORM work of an asyncio SMTP/LMTP server (the inbound listener, the
submission intake): aiosmtpd's handlers are coroutines, the ORM and our clients block."""
import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress

from django.db import close_old_connections, connections

RECHECK_AFTER_IDLE_SECONDS = 1.0


class OrmThreads:
    """Each thread keeps its database connection from one unit of work to the next, as Django keeps
    one across requests: checked as at the start of a request (health check; closed when broken or
    older than CONN_MAX_AGE) before a unit that follows a pause or a database error, and closed
    when the server stops. A unit right after one that went well finds the connection as that one
    left it: no health check query for each RCPT and DATA of a busy server. `on_close` runs in each
    thread as it closes (for connections of its own the thread keeps, such as LMTP sessions)."""

    def __init__(self, count: int, name: str, *, on_close=None):
        self.count = count
        self.executor = ThreadPoolExecutor(count, thread_name_prefix=name)
        self.on_close = on_close
        self._last_unit = threading.local()

    async def run(self, function, *args):
        def run():
            if self._due_for_check():
                close_old_connections()
            try:
                return function(*args)
            finally:
                self._last_unit.ended = time.monotonic()

        return await asyncio.get_running_loop().run_in_executor(self.executor, run)

    def _due_for_check(self) -> bool:
        now = time.monotonic()
        return now - getattr(self._last_unit, "ended", 0.0) > RECHECK_AFTER_IDLE_SECONDS or any(
            connection.errors_occurred or (connection.close_at is not None and now >= connection.close_at)
            for connection in connections.all(initialized_only=True))

    def close(self) -> None:
        """Close every thread's connections (each thread runs one close), then end the threads."""
        every_thread = threading.Barrier(self.count)

        def close_own():
            with suppress(threading.BrokenBarrierError):  # a thread still busy after 10 s: close the rest
                every_thread.wait(timeout=10)
            connections.close_all()
            if self.on_close is not None:
                self.on_close()

        for _ in range(self.count):
            self.executor.submit(close_own)
        self.executor.shutdown(wait=True)
