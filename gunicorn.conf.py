"""gunicorn as Mailwell runs it everywhere: `make run` (manage.py serve), the Docker image, and
bench/send.py. Sync workers, each serving one request at a time, behind a buffering proxy (Caddy
in production): every request goes to whichever process is free, from the kernel's accept queue.
Threaded workers with kept-alive connections pin each connection to one process, and 16 busy
connections over 8 processes landed unevenly: requests queued behind another on one GIL while a
core idled (p99 3-4x p50, against 1.3x here; docs/decisions.md, "Performance"). Nothing in the app
streams or holds a request open, so a process per request in flight is all the concurrency needed.
"""
import multiprocessing
import os

worker_class = "sync"
# gunicorn's classic sizing: two per core plus one, so a process waiting on the database or
# Dovecot leaves the cores busy with the others. WEB_CONCURRENCY overrides it.
workers = int(os.environ.get("WEB_CONCURRENCY") or 2 * multiprocessing.cpu_count() + 1)
graceful_timeout = 5
