"""Inbox listing: `GET /inbox` and the webmail's list page for a page of 50 out of a 10,000-message
Dovecot INBOX, against a direct imapclient fetch of the same page; and how both scale from 10 to
1,000 to 10,000 messages.

    .venv/bin/python bench/inbox.py [--quick] [--requests 30] [--rounds 4] [--messages 10000]

The product: gunicorn as in production (DJANGO_ENV=production, PostgreSQL in a fresh database
mailwell_inbox_bench, gthread), MAIL_STORE=imap in front of a private Dovecot started with the
test suite's configuration (testkit.dovecot: docker/dovecot/mailwell.conf, users read from the
bench database through Dovecot's pgsql driver), reached with the master user as in production.
Three mailboxes hold 10, 1,000 and --messages (10,000) realistic messages, stored with IMAP
MULTIAPPEND (varied senders, encoded subjects, a fifth with a PDF attachment, most read, some
starred or labelled).

The baseline: one imapclient connection, logged in once (master user), per page: EXAMINE INBOX
(which gives the total) and one FETCH of the page's sequence numbers with the items a list needs:
UID FLAGS ENVELOPE RFC822.SIZE BODYSTRUCTURE (for the paperclip) INTERNALDATE, parsed by
imapclient. No HTTP, no Django, no database.

One sequential client (keep-alive http.client), alternating rounds, medians. Queries per request
are counted in this process through Django's whole stack (django.test.Client with
CaptureQueriesContext) against the same database and Dovecot. Prints the table rows.
"""
import argparse
import base64
import http.client
import random
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from email.header import Header
from pathlib import Path

import support
from send import Gunicorn
from support import BenchFailed, log, production_env
from support import use_env as support_use_env

BENCH_DB = "mailwell_inbox_bench"
DATABASE_URL = support.database_url(BENCH_DB)
STRIP_ENV = ["REDIS_URL", "SMTP_URL", "MAIL_STORE", "DEBUG", "DB_CONN_MAX_AGE", "DJANGO_SETTINGS_MODULE",
             "LOG_LEVEL", "IMAP_HOST", "IMAP_PORT", "IMAP_TLS", "DOVECOT_LMTP", "DOVECOT_MASTER_USER",
             "DOVECOT_MASTER_PASSWORD", "WEB_CONCURRENCY", "GUNICORN_CMD_ARGS", "API_KEY_USAGE_FLUSH_SECONDS"]
MASTER_USER = "benchmaster"
DOMAIN = "inbox.bench.test"
PER_PAGE = 50
MAILBOX_PASSWORD = "inbox bench password 1"
BASELINE_ITEMS = [b"UID", b"FLAGS", b"ENVELOPE", b"RFC822.SIZE", b"BODYSTRUCTURE", b"INTERNALDATE"]

FIRST_NAMES = ("Anna", "Bruno", "Chloé", "Dmitri", "Eva", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kofi", "Lena",
               "Marta", "Nils", "Olga", "Pablo", "Rosa", "Sven", "Tomás", "Yuki")
LAST_NAMES = ("Berg", "Costa", "Dubois", "Eriksen", "Fischer", "García", "Haas", "Ivanova", "Jensen", "Kowalski",
              "Lind", "Müller", "Novak", "Okafor", "Petrov", "Rossi", "Schmidt", "Tanaka", "Weber", "Zhang")
WORDS = ("invoice", "meeting", "agenda", "project", "weekly", "report", "update", "thanks", "review", "draft",
         "schedule", "budget", "customer", "release", "notes", "lunch", "travel", "question", "answer", "contract",
         "Angebot", "Rechnung", "réunion", "prochaine", "étape", "pedido", "entrega")
PARAGRAPH = ("Hello, following up on our conversation from last week: the figures are attached where noted, and "
             "the open points are listed below. Let me know what you think before Friday.\n")


# --- the messages -------------------------------------------------------------------------------


def realistic_message(rng: random.Random, index: int, to: str, when: datetime) -> tuple[bytes, list[bytes]]:
    """A message as mail clients send it, and the flags it is stored with."""
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    sender = f"{Header(f'{first} {last}', 'utf-8').encode()} <{first.lower()[:3]}.{last.lower()[:4]}@example.com>"
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))
    subject = Header(f"{words.capitalize()} #{index}", "utf-8").encode() if not words.isascii() \
        else f"{'Re: ' if rng.random() < 0.3 else ''}{words.capitalize()} #{index}"
    headers = (f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\n"
               f"Date: {when.strftime('%a, %d %b %Y %H:%M:%S +0000')}\r\n"
               f"Message-ID: <{index}.{rng.getrandbits(64):x}@example.com>\r\nMIME-Version: 1.0\r\n")
    text = (PARAGRAPH * rng.randint(1, 12)).replace("\n", "\r\n")
    if rng.random() < 0.2:
        payload = base64.encodebytes(rng.randbytes(rng.randint(2_000, 40_000))).decode().replace("\n", "\r\n")
        raw = (headers + 'Content-Type: multipart/mixed; boundary="b1"\r\n\r\n--b1\r\n'
               f"Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n--b1\r\n"
               f'Content-Type: application/pdf; name="report-{index}.pdf"\r\n'
               f'Content-Disposition: attachment; filename="report-{index}.pdf"\r\n'
               f"Content-Transfer-Encoding: base64\r\n\r\n{payload}--b1--\r\n")
    else:
        raw = headers + f"Content-Type: text/plain; charset=utf-8\r\n\r\n{text}"
    flags = [b"\\Seen"] if rng.random() < 0.7 else []
    if rng.random() < 0.05:
        flags.append(b"\\Flagged")
    return raw.encode(), flags


def fill(client, address: str, count: int, label_keywords: list[str], batch: int = 250) -> None:
    """`count` messages into INBOX, oldest first, with MULTIAPPEND in batches."""
    rng = random.Random(f"{address}-{count}")
    start = datetime(2025, 1, 1, tzinfo=UTC)
    step = timedelta(days=400) / max(count, 1)
    pending = []
    for index in range(count):
        when = start + step * index
        raw, flags = realistic_message(rng, index, address, when)
        if label_keywords and rng.random() < 0.05:
            flags.append(rng.choice(label_keywords).encode())
        pending.append({"msg": raw, "flags": flags, "date": when})
        if len(pending) == batch or index == count - 1:
            client.multiappend("INBOX", pending)
            pending = []


# --- the setup ----------------------------------------------------------------------------------


def product_env(data_dir: Path) -> dict[str, str]:
    return production_env(data_dir, DATABASE_URL, STRIP_ENV, SESSION_COOKIE_SECURE="false", MAIL_STORE="imap",
                          IMAP_TLS="false", DOVECOT_MASTER_USER=MASTER_USER,
                          DOVECOT_MASTER_PASSWORD=secrets.token_urlsafe(24))


def use_env(env: dict[str, str]) -> None:
    """This process gets the server's settings, so what it creates and counts is the server's."""
    support_use_env(env, STRIP_ENV)


def make_account(sizes: list[int]) -> dict:
    """A premium account with an API key (mailboxes:read), two labels, and one mailbox per size,
    each with a webmail session."""
    from mailcore.accounts.services import user_create_with_account
    from mailcore.apikeys.services import api_key_create
    from mailcore.domains.services import domain_create, domain_mark_verified
    from mailcore.inbox.labels import label_create
    from mailcore.mailboxes.services import mailbox_create
    from webmail.sessions import webmail_login

    user = user_create_with_account(email="owner@bench.test", password=None, plan_code="premium")
    _, api_key = api_key_create(account=user.account, created_by=user, name="inbox bench", scopes=["mailboxes:read"])
    labels = [label_create(account=user.account, name=name, color=color).keyword
              for name, color in (("Clients", "#1a73e8"), ("Finance", "#d93025"))]
    domain = domain_mark_verified(domain=domain_create(account=user.account, name=DOMAIN))
    mailboxes = {}
    for size in sizes:
        mailbox = mailbox_create(domain=domain, local_part=f"m{size}", password=MAILBOX_PASSWORD)
        _, cookie = webmail_login(address=mailbox.address, password=MAILBOX_PASSWORD, client_ip="127.0.0.1")
        mailboxes[size] = {"address": mailbox.address, "cookie": cookie}
    return {"api_key": api_key, "labels": labels, "mailboxes": mailboxes}


def imap_client(dovecot, address: str):
    from imapclient import IMAPClient

    client = IMAPClient(dovecot.host, port=dovecot.imap_port, ssl=False, timeout=60)
    client.login(f"{address}*{dovecot.master_user}", dovecot.master_password)
    return client


# --- the paths measured -------------------------------------------------------------------------


class HttpPath:
    """One URL fetched on a keep-alive connection; every answer is checked."""

    def __init__(self, port: int, path: str, headers: dict, rows: int, marker: bytes):
        self.port, self.path, self.headers, self.rows, self.marker = port, path, headers, rows, marker
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def reconnect(self) -> None:
        """Before each batch, untimed: gunicorn closes a keep-alive connection idle for 2 s."""
        self.connection.close()
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        self.connection.connect()

    def __call__(self) -> None:
        self.connection.request("GET", self.path, headers=self.headers)
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200 or body.count(self.marker) != self.rows:
            raise BenchFailed(f"GET {self.path}: {response.status}, {body.count(self.marker)} rows "
                              f"(expected {self.rows}): {body[:300]!r}")


class DirectPath:
    """The baseline: EXAMINE, then one FETCH of the page's sequence numbers, on a logged-in client."""

    def __init__(self, client, page: int, rows: int):
        self.client, self.page, self.rows = client, page, rows

    def __call__(self) -> None:
        exists = self.client.select_folder("INBOX", readonly=True)[b"EXISTS"]
        newest = exists - (self.page - 1) * PER_PAGE
        oldest = max(1, newest - PER_PAGE + 1)
        self.client.use_uid = False
        try:
            found = self.client.fetch(list(range(oldest, newest + 1)), BASELINE_ITEMS)
        finally:
            self.client.use_uid = True
        if len(found) != self.rows:
            raise BenchFailed(f"the direct fetch got {len(found)} messages, expected {self.rows}")


def measure(paths: dict, requests: int, rounds: int, warmup: int) -> dict[str, list[float]]:
    """Each path `requests` times per round, in alternating order; seconds per request."""
    for call in paths.values():
        getattr(call, "reconnect", lambda: None)()
        for _ in range(warmup):
            call()
    timings = {name: [] for name in paths}
    names = list(paths)
    for round_index in range(rounds):
        for name in names if round_index % 2 == 0 else names[::-1]:
            call = paths[name]
            getattr(call, "reconnect", lambda: None)()
            for _ in range(requests):
                started = time.perf_counter()
                call()
                timings[name].append(time.perf_counter() - started)
        log(f"round {round_index + 1}/{rounds}: " + ", ".join(
            f"{name} {statistics.median(values) * 1000:.1f}" for name, values in timings.items()))
    return timings


def queries_per_request(api_key: str, mailboxes: dict) -> dict[str, int]:
    """Database queries of one request through Django's whole stack, in this process."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    counts = {}
    for size, mailbox in mailboxes.items():
        api = Client(HTTP_X_API_KEY=api_key, HTTP_HOST="127.0.0.1")
        web = Client(HTTP_HOST="127.0.0.1")
        web.cookies["mw_webmail"] = mailbox["cookie"]
        for name, call in ((f"api {size}", lambda: api.get("/inbox", {"email": mailbox["address"]})),
                           (f"web {size}", lambda: web.get("/webmail/inbox/"))):
            call()  # the first request of a process reads what later ones have cached
            with CaptureQueriesContext(connection) as captured:
                response = call()
            if response.status_code != 200:
                raise BenchFailed(f"{name}: {response.status_code} {response.content[:300]!r}")
            counts[name] = len(captured.captured_queries)
    return counts


def profile_in_process(api_key: str, mailbox: dict, requests: int) -> str:
    """cProfile of GET /inbox and the webmail list through Django's whole stack, in this process."""
    import cProfile
    import io
    import pstats

    from django.test import Client

    api = Client(HTTP_X_API_KEY=api_key, HTTP_HOST="127.0.0.1")
    web = Client(HTTP_HOST="127.0.0.1")
    web.cookies["mw_webmail"] = mailbox["cookie"]
    texts = []
    for name, call in (("GET /inbox", lambda: api.get("/inbox", {"email": mailbox["address"]})),
                       ("webmail list", lambda: web.get("/webmail/inbox/"))):
        for _ in range(5):
            call()
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        for _ in range(requests):
            call()
        profiler.disable()
        elapsed = (time.perf_counter() - started) / requests * 1000
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(r"/(api|mailcore|portal)/", 25)
        stats.sort_stats("tottime").print_stats(20)
        texts.append(f"cProfile: {name}, {requests} requests in process, {elapsed:.1f} ms each\n{out.getvalue()}")
    return "\n".join(texts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000, help="messages in the large INBOX (10,000)")
    parser.add_argument("--requests", type=int, default=30, help="requests per path and round (30)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds, alternating order (4)")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up requests per path (10)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers (4)")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker (4)")
    parser.add_argument("--quick", action="store_true", help="15 requests x 2 rounds per path")
    parser.add_argument("--profile", action="store_true", help="also print cProfile of both pages in process")
    support.add_rows_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.requests, args.rounds, args.warmup = 15, 2, 5

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    run_started = time.perf_counter()
    load_at_start = support.load_average()
    temp = Path(tempfile.mkdtemp(prefix="mailwell-inbox-bench-"))
    (temp / "data").mkdir()
    env = product_env(temp / "data")
    server = dovecot = dovecot_process = None
    clients = []
    database_created = django_ready = False
    sizes = sorted({10, 1_000, args.messages})
    large, small = sizes[-1], sizes[0]
    try:
        log(f"creating database {BENCH_DB}; migrating")
        support.create_database(BENCH_DB)
        database_created = True
        support.manage(env, "migrate", "--noinput")
        support.manage(env, "collectstatic", "--noinput")  # the pages' manifest, as the image has it
        use_env(env)
        import django

        django.setup()
        django_ready = True
        from testkit.dovecot import start_dovecot

        made = make_account(sizes)
        dovecot, dovecot_process = start_dovecot(MASTER_USER, master_password=env["DOVECOT_MASTER_PASSWORD"])
        env.update(IMAP_HOST=dovecot.host, IMAP_PORT=str(dovecot.imap_port),
                   DOVECOT_LMTP=f"{dovecot.host}:{dovecot.lmtp_port}")
        use_env(env)
        from django.conf import settings

        settings.IMAP_HOST, settings.IMAP_PORT = dovecot.host, dovecot.imap_port
        for size in sizes:
            started = time.perf_counter()
            client = imap_client(dovecot, made["mailboxes"][size]["address"])
            fill(client, made["mailboxes"][size]["address"], size, made["labels"])
            client.logout()  # the baseline logs in afresh, like the product: no state left from storing
            clients.append(imap_client(dovecot, made["mailboxes"][size]["address"]))
            log(f"{size} messages stored in {time.perf_counter() - started:.1f} s")

        server = Gunicorn(env, args.workers, args.threads, temp / "gunicorn.log")
        server.wait_ready()
        log(f"gunicorn up on 127.0.0.1:{server.port}: {args.workers} workers x {args.threads} threads")
        api_headers = {"X-API-Key": made["api_key"]}
        middle = large // PER_PAGE // 2
        paths = {}
        for size, client in zip(sizes, clients):
            mailbox = made["mailboxes"][size]
            rows = min(PER_PAGE, size)
            web_headers = {"Cookie": f"mw_webmail={mailbox['cookie']}"}
            paths[f"direct {size}"] = DirectPath(client, 1, rows)
            paths[f"api {size}"] = HttpPath(server.port, f"/inbox?email={mailbox['address']}", api_headers, rows,
                                            b'"uid":')
            paths[f"web {size}"] = HttpPath(server.port, "/webmail/inbox/", web_headers, rows, b"data-message-row")
        large_box = made["mailboxes"][large]
        paths["direct middle"] = DirectPath(clients[-1], middle, PER_PAGE)
        paths["api middle"] = HttpPath(server.port, f"/inbox?email={large_box['address']}&page={middle}",
                                       api_headers, PER_PAGE, b'"uid":')
        paths["web middle"] = HttpPath(server.port, f"/webmail/inbox/?page={middle}",
                                       {"Cookie": f"mw_webmail={large_box['cookie']}"}, PER_PAGE, b"data-message-row")
        timings = measure(paths, args.requests, args.rounds, args.warmup)
        ms = {name: statistics.median(values) * 1000 for name, values in timings.items()}
        queries = queries_per_request(made["api_key"], made["mailboxes"])
        if args.profile:
            print(profile_in_process(made["api_key"], made["mailboxes"][large], 50))
        server.stop()
        server = None

        print(f"\nmedian ms per request, {args.rounds} rounds x {args.requests} requests, one sequential client:")
        print(f"  {'messages':>9}  {'direct':>8}  {'GET /inbox':>10}  {'webmail':>8}  {'queries api/web':>16}")
        for size in sizes:
            print(f"  {size:>9,}  {ms[f'direct {size}']:>8.2f}  {ms[f'api {size}']:>10.2f}  {ms[f'web {size}']:>8.2f}"
                  f"  {queries[f'api {size}']:>8}/{queries[f'web {size}']}")
        print(f"  {'page ' + str(middle):>9}  {ms['direct middle']:>8.2f}  {ms['api middle']:>10.2f}  "
              f"{ms['web middle']:>8.2f}")
        log(f"load average {load_at_start} at start, {support.load_average()} at end; "
            f"run {time.perf_counter() - run_started:.0f} s")
        of = f"{large:,}"
        rows_ratio = min(PER_PAGE, large) / min(PER_PAGE, small)
        note = f"{args.rounds}x{args.requests} sequential requests, medians"
        rows = [
            support.row(f"Inbox: GET /inbox page of 50 of {of} in Dovecot (ms)", ms[f"api {large}"],
                        ms[f"direct {large}"], "ms", at_most=1.5, note=f"first page; {note}"),
            support.row(f"Inbox: GET /inbox page {middle} (50 of {of}) in Dovecot (ms)", ms["api middle"],
                        ms["direct middle"], "ms", at_most=1.5, note=note),
            support.row(f"Webmail list page, 50 of {of} (ms)", ms[f"web {large}"], ms[f"direct {large}"], "ms",
                        at_most=2, note=f"first page; {note}"),
            support.row(f"Webmail list page {middle} (50 of {of}) (ms)", ms["web middle"], ms["direct middle"], "ms",
                        at_most=2, note=note),
            support.row(f"Inbox scale: GET /inbox queries per request, {of} / {small} messages",
                        queries[f"api {large}"], queries[f"api {small}"], "queries", at_most=1),
            support.row(f"Inbox scale: webmail list queries per request, {of} / {small} messages",
                        queries[f"web {large}"], queries[f"web {small}"], "queries", at_most=1),
            support.row(f"Inbox scale: GET /inbox time, {of} / {small} messages (ms)", ms[f"api {large}"],
                        ms[f"api {small}"], "ms", at_most=rows_ratio,
                        note=f"target: rows on the page, {min(PER_PAGE, large)} / {min(PER_PAGE, small)}"),
            support.row(f"Inbox scale: webmail list time, {of} / {small} messages (ms)", ms[f"web {large}"],
                        ms[f"web {small}"], "ms", at_most=rows_ratio,
                        note=f"target: rows on the page, {min(PER_PAGE, large)} / {min(PER_PAGE, small)}"),
        ]
        support.rows_report(rows, args.rows_file)
        return 0
    except BenchFailed as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        if server is not None:
            print(server.log_tail(), file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
        for client in clients:
            try:
                client.logout()
            except Exception:  # noqa: BLE001 - cleaning up
                pass
        if dovecot_process is not None:
            from testkit.dovecot import stop_dovecot

            stop_dovecot(dovecot, dovecot_process)
        support.release_database(BENCH_DB, django_ready, database_created)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
