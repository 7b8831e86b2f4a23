"""Campaign benchmark: the campaign engine against the plain send path, in the same run, on the
same database and the same SMTP sink. One run, one machine, ratios.

    .venv/bin/python bench/campaigns.py [--contacts 500] [--rounds 2]

In this process, against a fresh PostgreSQL database (`mailwell_campaigns_bench`, migrated, dropped
at the end), with a mailbox on a plan with huge quotas and CAMPAIGN_SENDS_PER_HOUR out of the way:

- campaign: N contacts enrolled in a one-step campaign (`campaign_send`), then the sweep's job
  `campaigns_run_due()` runs until every delivery is sent: the time from "due" to N OutboundMessage
  rows (claim with FOR UPDATE SKIP LOCKED, suppression check, personalise, the deliverability
  headers, mail_send, mark sent, schedule the next step: one transaction per delivery); then
  `outbound_dispatch_due()` until all N are handed to an aiosmtpd sink on loopback.
- plain: N `mail_send` calls (the service behind POST /mail/send) with the same personalised
  subject and body, then the same dispatch to the same sink.

Rounds alternate the order (campaign, plain; plain, campaign; ...). Prints a table (path, messages,
seconds, msg/s, ratio to plain) and writes the figures to bench/results/campaigns-<UTC time>.json.
Exit status 0 when every message arrived exactly once per contact.
"""
import argparse
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections import Counter
from pathlib import Path

from support import (BenchFailed, create_database, database_url, git_commit, load_average, log, machine, manage,
                     release_database, utc_timestamp, write_results,
                     add_rows_argument, row, rows_report)

BENCH_DB = "mailwell_campaigns_bench"
SENDER = "news@campaigns.bench.test"
STRIP_ENV = ["REDIS_URL", "SMTP_URL", "MAIL_STORE", "DEBUG", "DB_CONN_MAX_AGE", "DJANGO_SETTINGS_MODULE",
             "LOG_LEVEL", "CAMPAIGN_SENDS_PER_HOUR"]
PARAGRAPH = ("<p>Hello {{first_name}}, this is a benchmark campaign from Mailwell. It carries a few "
             "paragraphs of ordinary HTML so that the MIME, DKIM and storage work is realistic.</p>\n")
BODY_HTML = "<h1>Weekly update</h1>\n" + PARAGRAPH * 8 + '<p><a href="https://example.com/more">Read more</a></p>'
SUBJECT = "News for {{first_name}}"


def setup_sender(contacts: int):
    from mailcore.accounts.models import Plan
    from contacts.services import address_book_for, contact_create
    from testkit.factories import UserFactory, make_mailbox

    plan = Plan.objects.get(code="premium")
    plan.pk, plan.code, plan.name, plan.rank = None, "bench", "Bench", 99
    plan.sends_per_day = plan.sends_per_hour = 10_000_000
    plan.storage_mb = 1_000_000
    plan.save()
    user = UserFactory(email="bench@campaigns.bench.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, SENDER, password=secrets.token_urlsafe(16))
    mailbox.plan = plan
    mailbox.save(update_fields=["plan"])
    book = address_book_for(account=user.account)
    for index in range(contacts):
        contact_create(book=book, name=f"Reader{index} Bench", email=f"reader{index}@sink.bench.test")
    return user, mailbox, book


def dispatch_all(budget_s: float = 300) -> int:
    from mailcore.sending.dispatch import outbound_dispatch_due

    handled, deadline = 0, time.monotonic() + budget_s
    while count := outbound_dispatch_due():
        handled += count
        if time.monotonic() > deadline:
            raise BenchFailed(f"dispatch still running after {budget_s} s ({handled} handled)")
    return handled


def campaign_round(user, mailbox, book, contacts: int, handler, tag: str) -> dict:
    from campaigns.engine import campaigns_run_due
    from campaigns.models import StepDelivery
    from campaigns.services import campaign_create, campaign_send

    campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name=f"Bench {tag}",
                               subject=SUBJECT, body_html=BODY_HTML, postal_address="1 Bench Street, Testville")
    received_before = len(handler.messages)
    started = time.perf_counter()
    enrolled = campaign_send(campaign=campaign)
    enrolled_at = time.perf_counter()
    sent = 0
    while count := campaigns_run_due():
        sent += count
    created = time.perf_counter()
    handled = dispatch_all()
    dispatched = time.perf_counter()
    rows = StepDelivery.objects.filter(enrollment__campaign=campaign, status=StepDelivery.Status.SENT).count()
    arrived = Counter(r for m in handler.messages[received_before:] for r in m.rcpt_tos)
    if not (enrolled == sent == rows == handled == contacts and len(arrived) == contacts
            and set(arrived.values()) == {1}):
        raise BenchFailed(f"campaign round {tag}: enrolled {enrolled}, sent {sent}, rows {rows}, dispatched "
                          f"{handled}, {len(arrived)} addresses reached (max {max(arrived.values(), default=0)} each)")
    return {"enrol_seconds": enrolled_at - started, "create_seconds": created - enrolled_at,
            "dispatch_seconds": dispatched - created, "total_seconds": dispatched - started}


def plain_round(user, mailbox, contacts: int, handler, tag: str) -> dict:
    from mailcore.sending.inputs import SendRequest
    from mailcore.sending.services import mail_send

    received_before = len(handler.messages)
    started = time.perf_counter()
    for index in range(contacts):
        first = f"Reader{index}"
        mail_send(account=user.account, user=user, request=SendRequest(
            from_email=mailbox.address, to=[f"reader{index}@sink.bench.test"],
            subject=SUBJECT.replace("{{first_name}}", first),
            body_html=BODY_HTML.replace("{{first_name}}", first)))
    created = time.perf_counter()
    handled = dispatch_all()
    dispatched = time.perf_counter()
    arrived = len(handler.messages) - received_before
    if handled != contacts or arrived != contacts:
        raise BenchFailed(f"plain round {tag}: dispatched {handled}, the sink received {arrived}; expected {contacts}")
    return {"enrol_seconds": 0.0, "create_seconds": created - started, "dispatch_seconds": dispatched - created,
            "total_seconds": dispatched - started}


def summarise(rounds: list[dict], contacts: int) -> dict:
    total = {key: sum(r[key] for r in rounds) for key in rounds[0]}
    messages = contacts * len(rounds)
    return {"messages": messages, **{key: round(value, 3) for key, value in total.items()},
            "create_msgs_per_s": messages / total["create_seconds"],
            "dispatch_msgs_per_s": messages / total["dispatch_seconds"],
            "end_to_end_msgs_per_s": messages / total["total_seconds"]}


def table(results: dict) -> str:
    campaign, plain = results["campaign"], results["plain"]
    lines = [f"\nCampaigns benchmark ({results['config']['contacts']} contacts x {results['config']['rounds']} rounds, "
             f"PostgreSQL, one process; ratio = campaign msg/s / plain msg/s)",
             f"{'path':<48}{'messages':>9}{'seconds':>10}{'msg/s':>10}{'ratio':>8}"]
    rows = [
        ("campaign: due -> OutboundMessage rows (engine)", campaign["messages"], campaign["create_seconds"],
         campaign["create_msgs_per_s"], results["ratio"]["create"]),
        ("plain: mail_send -> OutboundMessage rows", plain["messages"], plain["create_seconds"],
         plain["create_msgs_per_s"], 1.0),
        ("campaign: dispatch to the SMTP sink", campaign["messages"], campaign["dispatch_seconds"],
         campaign["dispatch_msgs_per_s"], results["ratio"]["dispatch"]),
        ("plain: dispatch to the SMTP sink", plain["messages"], plain["dispatch_seconds"],
         plain["dispatch_msgs_per_s"], 1.0),
        ("campaign: enrol + engine + dispatch", campaign["messages"], campaign["total_seconds"],
         campaign["end_to_end_msgs_per_s"], results["ratio"]["end_to_end"]),
        ("plain: mail_send + dispatch", plain["messages"], plain["total_seconds"],
         plain["end_to_end_msgs_per_s"], 1.0),
    ]
    for name, messages, seconds, rate, ratio in rows:
        lines.append(f"{name:<48}{messages:>9}{seconds:>10.2f}{rate:>10.1f}{ratio:>8.2f}")
    lines.append(f"(enrolling {results['config']['contacts']} contacts: "
                 f"{campaign['enrol_seconds'] / results['config']['rounds']:.2f} s per round, included in the total)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", type=int, default=500, help="contacts, and so messages per round and path")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per path, alternating the order")
    parser.add_argument("--quick", action="store_true", help="200 contacts, for make bench")
    add_rows_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.contacts = 200

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    run_started = time.perf_counter()
    load_at_start = load_average()
    if load_at_start[0] > 0.5 * (os.cpu_count() or 1):
        log(f"note: load average {load_at_start[0]} on {os.cpu_count()} CPUs before the run; "
            "other work on the machine will lower the figures (the ratios suffer less)")
    temp = Path(tempfile.mkdtemp(prefix="mailwell-campaigns-bench-"))
    env = {name: value for name, value in os.environ.items() if name not in STRIP_ENV}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DATA_DIR=str(temp), DATABASE_URL=database_url(BENCH_DB),
               CAMPAIGN_SENDS_PER_HOUR="100000000", LOG_LEVEL="WARNING")
    database_created = django_ready = False
    try:
        log(f"creating database {BENCH_DB}; migrating (DATA_DIR {temp})")
        create_database(BENCH_DB)
        database_created = True
        manage(env, "migrate", "--noinput")
        from testkit.smtp_sink import smtp_sink

        with smtp_sink(server_options={"server_hostname": "sink.bench.test"}) as (sink_port, handler):
            os.environ.update(env)
            for name in STRIP_ENV:
                if name not in env:
                    os.environ.pop(name, None)
            os.environ["SMTP_URL"] = f"smtp://127.0.0.1:{sink_port}"
            import django

            django.setup()
            django_ready = True
            log(f"{args.contacts} contacts, a mailbox on a plan with huge quotas")
            user, mailbox, book = setup_sender(args.contacts)
            warm = campaign_round(user, mailbox, book, args.contacts, handler, "warm-up")  # DKIM key, Sent folder
            log(f"warm-up campaign round: {warm['total_seconds']:.1f} s")
            runs: dict[str, list[dict]] = {"campaign": [], "plain": []}
            for index in range(args.rounds):
                order = ["campaign", "plain"] if index % 2 == 0 else ["plain", "campaign"]
                for path in order:
                    tag = f"round {index + 1}"
                    run = (campaign_round(user, mailbox, book, args.contacts, handler, tag) if path == "campaign"
                           else plain_round(user, mailbox, args.contacts, handler, tag))
                    log(f"{tag} {path}: create {run['create_seconds']:.2f} s, dispatch {run['dispatch_seconds']:.2f} s")
                    runs[path].append(run)
        campaign, plain = summarise(runs["campaign"], args.contacts), summarise(runs["plain"], args.contacts)
        results = {
            "benchmark": "campaigns",
            "timestamp": utc_timestamp(),
            "machine": machine(load_average_at_start=load_at_start, load_average_at_end=load_average()),
            "commit": git_commit(),
            "config": {"contacts": args.contacts, "rounds": args.rounds, "database": "postgresql"},
            "campaign": campaign,
            "plain": plain,
            "ratio": {"create": campaign["create_msgs_per_s"] / plain["create_msgs_per_s"],
                      "dispatch": campaign["dispatch_msgs_per_s"] / plain["dispatch_msgs_per_s"],
                      "end_to_end": campaign["end_to_end_msgs_per_s"] / plain["end_to_end_msgs_per_s"]},
        }
        print(table(results))
        write_results(results, "campaigns", run_started)
        rows_report([row(f"Campaigns: {args.contacts} contacts, due to sent, against plain mail_send",
                         campaign["end_to_end_msgs_per_s"], plain["end_to_end_msgs_per_s"], "msg/s",
                         note="issue 17: no target; dispatch is shared with plain sends")], args.rows_file)
        return 0
    except BenchFailed as error:
        print(f"benchmark failed: {error}")
        return 1
    finally:
        release_database(BENCH_DB, django_ready, database_created)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
