"""Scale curves of the partner's reads: the same pages for hosting partners with 10, 1,000 and 10,000
mailboxes. One run, one machine, ratios.

    .venv/bin/python bench/scale.py [--quick] [--requests 40] [--rounds 3]

Three partners are made in a fresh PostgreSQL database (bulk rows: clients, verified domains, two
domains awaiting DNS, slots, mailboxes in every status on both plans, sent messages and daily usage
for each mailbox). For each partner and path, in the script's process through django.test.Client, the
SQL queries of one request are counted (CaptureQueriesContext); then gunicorn (production settings,
PostgreSQL) answers sequential requests on one keep-alive connection, in rounds that alternate the
partners' order, and the median is taken. Paths: `GET /v1/hosting/stats` (the partner's API key),
`GET /v1/hosting/mailboxes?per_page=50` (its first page), the portal's mailbox list and the portal's
dashboard (a signed-in session; first page).

The baseline of each row is the same path for the partner with 10 mailboxes. Targets: queries at
10,000 no more than at 10; time at 10,000 no more than the page grew (a page of 50 rows against 10:
5x); for the stats and the dashboard (aggregates, no page) at most 2x. The 1,000 point is printed.
Figures go to bench/results/scale-<UTC time>.json.
"""
import argparse
import http.client
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from send import Gunicorn, product_env
from support import (BenchFailed, add_rows_argument, create_database, database_url, git_commit, load_average, log,
                     machine, manage, release_database, row, rows_report, utc_timestamp, write_results)

BENCH_DB = "mailwell_scale_bench"
SIZES = (10, 1_000, 10_000)
PAGE = 50
SCOPES = ["partner:stats:read", "partner:mailboxes:read"]


@dataclass(frozen=True)
class Read:
    name: str
    url: str
    portal: bool  # a signed-in session instead of the API key
    paged: bool  # a page of PAGE rows, or an aggregate


PATHS = [
    Read("GET /v1/hosting/stats", "/v1/hosting/stats", portal=False, paged=False),
    Read("GET /v1/hosting/mailboxes", f"/v1/hosting/mailboxes?per_page={PAGE}", portal=False, paged=True),
    Read("portal mailbox list", "/portal/mailboxes/", portal=True, paged=True),
    Read("portal dashboard", "/", portal=True, paged=False),
]


@dataclass
class Partner:
    size: int
    api_key: str
    session: str


# --- the data -----------------------------------------------------------------------------------


def seed_partner(size: int, password_hash: str) -> Partner:
    """A partner with `size` mailboxes spread over size/50 clients and size/10 verified domains, two
    domains awaiting DNS, a slot per mailbox and some unused, and per mailbox two sent messages and
    three days of usage."""
    from datetime import timedelta

    from django.test import Client
    from django.utils import timezone

    from mailcore.accounts.models import Account, Plan, User
    from mailcore.apikeys.services import api_key_create
    from mailcore.domains.models import Domain
    from mailcore.mailboxes.models import Mailbox
    from mailcore.outbound.models import OutboundMessage
    from mailcore.partners.models import MailboxSlot, PartnerClient, PartnerMailbox
    from mailcore.partners.services import hosting_partner_enable
    from mailcore.usage.models import MailboxDailyUsage

    now = timezone.now()
    plans = {plan.code: plan for plan in Plan.objects.filter(code__in=["pro", "premium"])}
    account = Account.objects.create(name=f"Partner of {size}", plan=Plan.objects.get(code="premium"))
    user = User.objects.create_user(email=f"owner{size}@partners.bench.test", password="bench-password-1",
                                    account=account)
    partner = hosting_partner_enable(account=account, status="active")
    partner.extra_domain_slots = size
    partner.save(update_fields=["extra_domain_slots"])
    suffix = f"p{size}.bench.test"
    clients = PartnerClient.objects.bulk_create(
        [PartnerClient(partner=partner, name=f"Client {n:05d}") for n in range(max(1, size // 50))])
    domains = Domain.objects.bulk_create(
        [Domain(account=account, client=clients[n % len(clients)], name=f"d{n}.{suffix}", status="verified",
                verification_token="t", verified_at=now) for n in range(max(1, size // 10))], batch_size=2000)
    dns_check = [{"type": "MX", "host": "@", "value": "10 mail.mailwell.test", "description": "Routes incoming mail",
                  "ok": False, "found_value": None, "reason": "no MX record"}]
    Domain.objects.bulk_create([Domain(account=account, client=clients[0], name=f"pending{n}.{suffix}",
                                       status=status, verification_token="t", dns_check=dns_check)
                                for n, status in enumerate(["pending", "failed"])])
    statuses = ["active"] * 16 + ["trial"] * 2 + ["expired", "suspended"]
    mailboxes = Mailbox.objects.bulk_create(
        [Mailbox(account=account, domain=domains[n % len(domains)], local_part=f"user{n}",
                 address=f"user{n}@{domains[n % len(domains)].name}", display_name=f"User {n}",
                 password_hash=password_hash, plan=plans["pro" if n % 3 else "premium"])
         for n in range(size)], batch_size=2000)
    slots = MailboxSlot.objects.bulk_create(
        [MailboxSlot(partner=partner, status="assigned" if n < size else "unused", expires_at=now + timedelta(days=30))
         for n in range(size + max(1, size // 10))], batch_size=2000)
    PartnerMailbox.objects.bulk_create(
        [PartnerMailbox(partner=partner, mailbox=mailbox, slot=slots[n], plan_type=mailbox.plan.code,
                        status=statuses[n % len(statuses)], expires_at=now + timedelta(days=1 + n % 60))
         for n, mailbox in enumerate(mailboxes)], batch_size=2000)
    OutboundMessage.objects.bulk_create(
        [OutboundMessage(account=account, mailbox=mailbox, status="sent", due_at=now - timedelta(hours=k),
                         sent_at=now - timedelta(hours=k), finished_at=now - timedelta(hours=k),
                         payload={"to": ["someone@elsewhere.test"], "subject": f"Report {k}", "text": "Hello."})
         for mailbox in mailboxes for k in range(2)], batch_size=2000)
    MailboxDailyUsage.objects.bulk_create(
        [MailboxDailyUsage(mailbox=mailbox, date=(now - timedelta(days=day)).date(), sends=2, ai_requests=1)
         for mailbox in mailboxes for day in range(3)], batch_size=2000)
    _, raw_key = api_key_create(account=account, created_by=user, name="scale bench", scopes=SCOPES)
    browser = Client(HTTP_HOST="127.0.0.1")
    browser.force_login(user)
    return Partner(size, raw_key, browser.cookies["sessionid"].value)


def vacuum_analyze() -> None:
    """Planner statistics and the visibility map, as autovacuum leaves them after a bulk load."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def headers(partner: Partner, path: Read) -> dict:
    return {"Cookie": f"sessionid={partner.session}"} if path.portal else {"X-API-Key": partner.api_key}


# --- measuring ----------------------------------------------------------------------------------


def count_queries(partner: Partner, path: Read) -> tuple[int, int]:
    """Queries of one request (after a first one that warms caches) and the rows on its page."""
    import re

    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    extra = {"HTTP_COOKIE": f"sessionid={partner.session}"} if path.portal else {"HTTP_X_API_KEY": partner.api_key}
    client.get(path.url, **extra)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path.url, **extra)
    if response.status_code != 200:
        raise BenchFailed(f"{path.name} for {partner.size} answered {response.status_code}: {response.content[:300]!r}")
    if path.portal:
        rows = len(re.findall(rb'class="mailbox-address"', response.content))
    else:
        body = response.json()
        rows = len(body) if isinstance(body, list) else 0
    return len(queries), rows


def timed_requests(port: int, partner: Partner, path: Read, count: int) -> list[float]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            connection.request("GET", path.url, headers=headers(partner, path))
            response = connection.getresponse()
            body = response.read()
            times.append(time.perf_counter() - started)
            if response.status != 200:
                raise BenchFailed(f"{path.name} for {partner.size} answered {response.status}: {body[:300]!r}")
    finally:
        connection.close()
    return times


def http_medians(port: int, partners: list[Partner], requests: int, rounds: int) -> dict:
    """Median ms per (path, size), from `rounds` rounds that alternate the partners' order."""
    samples: dict[tuple[str, int], list[float]] = {}
    for path in PATHS:
        for partner in partners:
            timed_requests(port, partner, path, 5)  # warm-up
        for round_index in range(rounds):
            order = partners if round_index % 2 == 0 else list(reversed(partners))
            for partner in order:
                samples.setdefault((path.name, partner.size), []).extend(
                    timed_requests(port, partner, path, requests))
        log(f"{path.name}: " + ", ".join(
            f"{partner.size}: {statistics.median(samples[path.name, partner.size]) * 1000:.1f} ms"
            for partner in partners))
    return {key: statistics.median(values) * 1000 for key, values in samples.items()}


# --- the table ----------------------------------------------------------------------------------


def table_rows(results: dict) -> list[dict]:
    small, large = SIZES[0], SIZES[-1]
    rows = []
    for path in PATHS:
        figures = results["paths"][path.name]
        queries = {int(size): figure["queries"] for size, figure in figures.items()}
        times = {int(size): figure["median_ms"] for size, figure in figures.items()}
        page_rows = {int(size): figure["rows"] for size, figure in figures.items()}
        rows.append(row(f"scale: {path.name} queries at {large:,} / at {small}", queries[large], queries[small],
                        "queries", at_most=1, note=f"at 1,000: {queries[1_000]}"))
        allowed = min(PAGE, large) / min(PAGE, small) if path.paged else 2
        rows.append(row(f"scale: {path.name} time at {large:,} / at {small}", times[large], times[small], "ms",
                        at_most=allowed, note=f"at 1,000: {times[1_000]:.1f} ms; rows on the page "
                        f"{page_rows[small]} / {page_rows[1_000]} / {page_rows[large]}"))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (for make bench)")
    parser.add_argument("--requests", type=int, default=40, help="sequential requests per path, partner and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    add_rows_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.requests, args.rounds = 15, 2

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    run_started = time.perf_counter()
    load_at_start = load_average()
    temp = Path(tempfile.mkdtemp(prefix="mailwell-scale-bench-"))
    data_dir = temp / "data"
    data_dir.mkdir()
    server = None
    database_created = django_ready = False
    try:
        env = product_env(data_dir)
        env["DATABASE_URL"] = database_url(BENCH_DB)
        log(f"creating database {BENCH_DB}; migrating; collecting static files")
        create_database(BENCH_DB)
        database_created = True
        manage(env, "migrate", "--noinput")
        manage(env, "collectstatic", "--noinput")
        os.environ.update(env)
        import django

        django.setup()
        django_ready = True
        from mailcore.mailboxes.passwords import mailbox_password_hash

        password_hash = mailbox_password_hash("bench-mailbox-password")
        partners = []
        for size in SIZES:
            started = time.perf_counter()
            partners.append(seed_partner(size, password_hash))
            log(f"partner with {size:,} mailboxes seeded in {time.perf_counter() - started:.1f} s")
        vacuum_analyze()
        counted = {(path.name, partner.size): count_queries(partner, path) for path in PATHS for partner in partners}
        server = Gunicorn(env, args.workers, args.threads, temp / "gunicorn.log")
        server.wait_ready(partners[0].api_key)
        log(f"gunicorn up on 127.0.0.1:{server.port}: {args.workers} workers x {args.threads} threads")
        medians = http_medians(server.port, partners, args.requests, args.rounds)
        server.stop()
        server = None
        results = {
            "benchmark": "scale", "timestamp": utc_timestamp(), "commit": git_commit(),
            "machine": machine(load_average_at_start=load_at_start, load_average_at_end=load_average()),
            "config": {"sizes": SIZES, "page": PAGE, "requests": args.requests, "rounds": args.rounds,
                       "workers": args.workers, "threads": args.threads, "database": "postgresql",
                       "django_env": "production"},
            "paths": {path.name: {str(partner.size): {"queries": counted[path.name, partner.size][0],
                                                      "rows": counted[path.name, partner.size][1],
                                                      "median_ms": round(medians[path.name, partner.size], 2)}
                                  for partner in partners} for path in PATHS},
        }
        rows = table_rows(results)
        results["rows"] = rows
        write_results(results, "scale", run_started)
        rows_report(rows, args.rows_file)
        return 0
    except BenchFailed as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            if sys.exc_info()[0] is not None:
                print(server.log_tail(), file=sys.stderr)
            server.stop()
        release_database(BENCH_DB, django_ready, database_created)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
