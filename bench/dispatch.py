"""SMTP dispatch benchmark: N sends that fall due at one moment, delivered by the worker as it runs
(the embedded `manage.py worker`, then Celery worker + beat on Redis), against a bare smtplib loop
handing the same signed bytes to the same sink over one connection. One run, one machine, ratios.

    .venv/bin/python bench/dispatch.py [--messages 200] [--rounds 2] [--quick]

The database is PostgreSQL (a fresh `mailwell_dispatch_bench`), the worker runs with
DJANGO_ENV=production, SMTP_URL pointing to an aiosmtpd sink in a child process on loopback, the
embedded mail store for the Sent copies. In this process `mail_send` stores N real sends held for
tomorrow; one UPDATE then makes them all due at the same moment T (3 s ahead); the figure is
N / (arrival of the last message at the sink - T). The baseline is the physical limit of the
hand-over: one smtplib connection, `sendmail` of the very bytes the product sent, N times.
Also prints the cost of each stage of dispatch (MIME, DKIM, SMTP, Sent copy, events, the rest),
from one batch dispatched in this process. Everything is cleaned up, also on failure.
"""
import argparse
import base64
import multiprocessing
import os
import secrets
import shutil
import signal
import smtplib
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

from support import (PYTHON, ROOT, BenchFailed, add_rows_argument, create_database, database_url, load_average,
                     log, manage, release_database, row, rows_report, seed_demo)

BENCH_DB = "mailwell_dispatch_bench"
REDIS_URL = "redis://127.0.0.1:6379/5"
DEMO_DOMAIN = "demo.mailwell.test"
DEMO_USER = "demo@mailwell.test"
STRIP_ENV = ["REDIS_URL", "SMTP_URL", "MAIL_STORE", "DEBUG", "DB_CONN_MAX_AGE", "SWEEP_INTERVAL_SECONDS",
             "DJANGO_SETTINGS_MODULE", "LOG_LEVEL", "CELERY_BROKER_URL"]
PARAGRAPH = ("<p>Hello, this is a benchmark message from Mailwell. It carries a few paragraphs of "
             "ordinary HTML so that the MIME, DKIM and storage work is realistic.</p>\n")
BODY_HTML = "<h1>Weekly update</h1>\n" + PARAGRAPH * 8 + '<p><a href="https://example.com/more">Read more</a></p>'


# --- the sink, in a child process so that it never competes with this process for the GIL -------


def sink_main(port: int, commands, count, last_arrival) -> None:
    """An aiosmtpd sink (testkit's) that publishes how many messages arrived and when the last did;
    on request it hands over what it holds (the `take` command) or its session count."""
    sys.path.insert(0, str(ROOT))
    from testkit.smtp_sink import SinkHandler
    from aiosmtpd.controller import Controller

    class Counting(SinkHandler):
        async def handle_DATA(self, server, session, envelope):
            reply = await super().handle_DATA(server, session, envelope)
            last_arrival.value = time.time()
            count.value += 1
            return reply

    handler = Counting()
    controller = Controller(handler, hostname="127.0.0.1", port=port, server_hostname="sink.bench.test")
    controller.start()
    commands.send("ready")
    while (command := commands.recv()) != "stop":
        if command == "take":
            taken, handler.messages = handler.messages, []
            commands.send([(m.mail_from, m.rcpt_tos, m.content) for m in taken])
        elif command == "sessions":
            commands.send(handler.greetings)
    controller.stop()


class Sink:
    def __init__(self):
        from testkit.smtp_sink import free_port

        context = multiprocessing.get_context("spawn")
        self.port = free_port()
        self.count, self.last_arrival = context.Value("l", 0, lock=False), context.Value("d", 0.0, lock=False)
        self._commands, theirs = context.Pipe()
        self.process = context.Process(target=sink_main, args=(self.port, theirs, self.count, self.last_arrival),
                                       daemon=True)
        self.process.start()
        if not self._commands.poll(30) or self._commands.recv() != "ready":
            raise BenchFailed("the SMTP sink did not start")

    def ask(self, command: str):
        self._commands.send(command)
        return self._commands.recv()

    def wait_for(self, total: int, timeout: float, what: str, workers=()) -> None:
        deadline = time.monotonic() + timeout
        while self.count.value < total:
            if time.monotonic() > deadline:
                tails = "\n".join(worker.log_tail() for worker in workers)
                raise BenchFailed(f"{what}: {self.count.value} of {total} messages at the sink "
                                  f"after {timeout} s\n{tails}")
            time.sleep(0.002)

    def stop(self) -> None:
        if self.process.is_alive():
            self._commands.send("stop")
            self.process.join(10)
        if self.process.is_alive():
            self.process.kill()


# --- the worker as it runs ----------------------------------------------------------------------


def product_env(data_dir: Path, sink_port: int) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in STRIP_ENV}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings", DJANGO_ENV="production", SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="127.0.0.1,localhost", FIELD_ENCRYPTION_KEY=base64.urlsafe_b64encode(os.urandom(32)).decode(),
        PUBLIC_BASE_URL="http://127.0.0.1",
        SECURE_SSL_REDIRECT="false", DATA_DIR=str(data_dir), DATABASE_URL=database_url(BENCH_DB),
        MAIL_STORE="embedded", SMTP_URL=f"smtp://127.0.0.1:{sink_port}", LOG_LEVEL="WARNING",
        PAYMENT_PROVIDER="stripe", STRIPE_API_KEY="sk_test_bench", STRIPE_WEBHOOK_SECRET="whsec_bench",
    )
    return env


class Worker:
    """A background worker started as `make run` starts it (portal/management/commands/serve.py)."""

    def __init__(self, name: str, command: list[str], env: dict, log_path: Path):
        self.name, self.log_path = name, log_path
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def log_tail(self) -> str:
        try:
            return f"--- {self.name} ---\n" + self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def check(self) -> None:
        if self.process.poll() is not None:
            raise BenchFailed(f"the {self.name} exited with {self.process.returncode}\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # celery's pool children too
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        self._log.close()


def embedded_worker(env: dict, temp: Path, index: int = 0) -> Worker:
    """`manage.py worker`; a second one (--embedded-workers) gets its own DATA_DIR, so its own
    cache and sweep locks, as on another machine."""
    if index:
        env = {**env, "DATA_DIR": str(temp / f"data{index}")}
        Path(env["DATA_DIR"]).mkdir(exist_ok=True)
    return Worker(f"embedded worker{f' {index + 1}' if index else ''}", [PYTHON, "manage.py", "worker"], env,
                  temp / f"worker{index}.log")


class Workers:
    """Several workers seen as one (the same interface as Worker)."""

    def __init__(self, workers: list[Worker]):
        self.workers, self.name = workers, f"{len(workers)} embedded workers"

    def log_tail(self) -> str:
        return "\n".join(worker.log_tail() for worker in self.workers)

    def check(self) -> None:
        for worker in self.workers:
            worker.check()

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()


def celery_worker(env: dict, temp: Path) -> Worker:
    return Worker("celery worker", [PYTHON, "-m", "celery", "-A", "config", "worker", "--beat", "--loglevel", "WARNING",
                                    "--schedule", str(temp / "celerybeat-schedule")],
                  {**env, "REDIS_URL": REDIS_URL}, temp / "celery.log")


def redis_flush() -> None:
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


# --- the rows (Django set up in this process against the bench database) ------------------------


def bench_sender():
    """A mailbox of its own on a plan with huge quotas, on seed_demo's managed (DKIM) domain."""
    from mailcore.accounts.models import Plan, User
    from mailcore.domains.models import Domain
    from mailcore.mailboxes.services import mailbox_create

    plan = Plan.objects.get(code="premium")
    plan.pk, plan.code, plan.name, plan.rank = None, "bench", "Bench", 99
    plan.sends_per_day = plan.sends_per_hour = 10_000_000
    plan.storage_mb = 1_000_000
    plan.save()
    user = User.objects.select_related("account").get(email=DEMO_USER)
    mailbox = mailbox_create(domain=Domain.objects.get(name=DEMO_DOMAIN), local_part="bench",
                             password=secrets.token_urlsafe(16), display_name="Bench Sender", plan=plan)
    return user, mailbox


def held_sends(user, mailbox, count: int, tag: str) -> list[int]:
    """`count` real sends through mail_send, held for tomorrow so that no worker takes them yet."""
    from django.utils import timezone

    from mailcore.sending.inputs import SendRequest
    from mailcore.sending.services import mail_send

    tomorrow = timezone.now() + timedelta(days=1)
    return [mail_send(account=user.account, user=user, request=SendRequest(
        from_email=mailbox.address, to=[f"{tag}-{index}@sink.bench.test"], subject=f"Benchmark {tag} {index}",
        body_html=BODY_HTML, scheduled_at=tomorrow)).pk for index in range(count)]


def make_due(ids: list[int], ahead: float = 3.0) -> float:
    """One UPDATE: every row falls due at the same moment, `ahead` seconds from now (more than one
    idle poll or beat tick away, as a scheduled send is); returns it."""
    from django.utils import timezone

    from mailcore.outbound.models import OutboundMessage

    due = timezone.now() + timedelta(seconds=ahead)
    OutboundMessage.objects.filter(pk__in=ids).update(due_at=due)
    return due.timestamp()


def all_recorded(ids: list[int]) -> bool:
    from mailcore.outbound.models import OutboundMessage

    return not OutboundMessage.objects.filter(pk__in=ids).exclude(status=OutboundMessage.Status.SENT).exists()


def product_round(sink: Sink, worker: Worker, user, mailbox, count: int, tag: str) -> dict:
    """N sends due at one moment; seconds from that moment to the last at the sink, and until
    every row is `sent` (Sent copy and events written)."""
    ids = held_sends(user, mailbox, count, tag)
    before = sink.count.value
    due = make_due(ids)
    sink.wait_for(before + count, 180, f"{worker.name} round {tag}", [worker])
    at_sink = sink.last_arrival.value - due
    deadline = time.monotonic() + 60
    while not all_recorded(ids):
        if time.monotonic() > deadline:
            raise BenchFailed(f"{worker.name}: rows of round {tag} not all `sent` 60 s after the sink had them")
        time.sleep(0.005)
    recorded = time.time() - due
    received = sink.ask("take")
    expected = {f"{tag}-{index}@sink.bench.test" for index in range(count)}
    got = [rcpt for _, rcpts, _ in received for rcpt in rcpts]
    if sorted(got) != sorted(expected) or not all(content.startswith(b"DKIM-Signature:") for *_, content in received):
        raise BenchFailed(f"{worker.name} round {tag}: the sink did not get each message once, DKIM-signed")
    worker.check()
    return {"seconds": at_sink, "msgs_per_s": count / at_sink, "recorded_seconds": recorded,
            "sample": received[-1]}


def bare_round(sink: Sink, sample: tuple, count: int) -> dict:
    """The physical limit: the same signed bytes over one connection, one transaction each."""
    mail_from, _, raw = sample
    before = sink.count.value
    started = time.time()
    client = smtplib.SMTP("127.0.0.1", sink.port, timeout=60)
    client.ehlo()
    for index in range(count):
        client.sendmail(mail_from, [f"bare-{index}@sink.bench.test"], raw)
    client.quit()
    sink.wait_for(before + count, 60, "bare smtplib")
    elapsed = sink.last_arrival.value - started
    sink.ask("take")
    return {"seconds": elapsed, "msgs_per_s": count / elapsed}


def unsigned(raw: bytes) -> bytes:
    """The message as built, before dispatch prepended its DKIM-Signature header (folded lines)."""
    lines = raw.split(b"\r\n")
    assert lines[0].startswith(b"DKIM-Signature:")
    rest = 1
    while lines[rest][:1] in (b" ", b"\t"):
        rest += 1
    return b"\r\n".join(lines[rest:])


def bare_signed_round(sink: Sink, sample: tuple, count: int) -> dict:
    """The physical limit with DKIM on: each message signed (the product's signer: OpenSSL's RSA on
    a parsed, cached key) and handed over on one connection. No database, no MIME building."""
    from mailcore.domains.dkim import dkim_key_for, dkim_sign

    mail_from, _, raw = sample
    body, domain = unsigned(raw), DEMO_DOMAIN
    key = dkim_key_for(domain)
    before = sink.count.value
    started = time.time()
    client = smtplib.SMTP("127.0.0.1", sink.port, timeout=60)
    client.ehlo()
    for index in range(count):
        client.sendmail(mail_from, [f"bare-{index}@sink.bench.test"], dkim_sign(body, domain_name=domain, key=key))
    client.quit()
    sink.wait_for(before + count, 60, "bare signing smtplib")
    elapsed = sink.last_arrival.value - started
    if not all(content.startswith(b"DKIM-Signature:") for *_, content in sink.ask("take")):
        raise BenchFailed("the signing baseline's messages were not signed")
    return {"seconds": elapsed, "msgs_per_s": count / elapsed}


def compare(sink: Sink, worker: Worker, user, mailbox, count: int, rounds: int, warmup: int) -> dict:
    """Warm-up, then rounds alternating product and baseline (A B, B A, ...)."""
    ids = held_sends(user, mailbox, warmup, f"warm-{worker.name.split()[0]}")
    before = sink.count.value
    make_due(ids, ahead=0)
    sink.wait_for(before + warmup, 120, f"{worker.name} warm-up", [worker])
    sample = sink.ask("take")[-1]
    product, bare, signed = [], [], []
    for index in range(rounds):
        steps = ["product", "signed", "bare"] if index % 2 == 0 else ["bare", "signed", "product"]
        for kind in steps:
            if kind == "product":
                product.append(product_round(sink, worker, user, mailbox, count, f"{worker.name.split()[0]}{index}"))
                sample = product[-1].pop("sample")
                log(f"{worker.name} round {index + 1}: {product[-1]['msgs_per_s']:.1f} msg/s "
                    f"({product[-1]['seconds']:.2f} s to the sink, {product[-1]['recorded_seconds']:.2f} s until all "
                    "rows were `sent`)")
            elif kind == "signed":
                signed.append(bare_signed_round(sink, sample, count))
                log(f"bare DKIM signing + smtplib round {index + 1}: {signed[-1]['msgs_per_s']:.1f} msg/s")
            else:
                bare.append(bare_round(sink, sample, count))
                log(f"bare smtplib round {index + 1}: {bare[-1]['msgs_per_s']:.1f} msg/s")
    total = lambda runs: count * len(runs) / sum(run["seconds"] for run in runs)  # noqa: E731
    return {"product_msgs_per_s": total(product), "bare_msgs_per_s": total(bare),
            "signed_msgs_per_s": total(signed), "rounds": product + signed + bare, "sessions": sink.ask("sessions")}


# --- the cost of each stage, from one batch dispatched in this process --------------------------


STAGES = [  # (module, owner attribute or None, function name, label); missing ones are skipped
    ("mailcore.sending.dispatch", None, "_claim", "claim (UPDATE)"),
    ("mailcore.sending.dispatch", None, "compose", "build MIME"),
    ("mailcore.sending.dispatch", None, "dkim_sign", "DKIM sign"),
    ("mailcore.outbound.relay", "Relay", "send", "SMTP hand-over"),
    ("mailcore.sending.dispatch", None, "relay", "SMTP hand-over"),
    ("mailcore.sending.dispatch", None, "_save_states", "final states (UPDATE)"),
    ("mailcore.sending.dispatch", None, "emit_many", "events (emit)"),
    ("mailcore.sending.dispatch", None, "_note_hand_over", "hand-over notes"),
    ("mailcore.sending.dispatch", None, "_keep_sent_copies", "Sent copy"),
    ("mailcore.store.embedded", "EmbeddedStore", "append", "Sent copy"),
    ("mailcore.store.embedded", None, "read", "  of which: parsing"),
]


def stage_profile(user, mailbox, count: int) -> str:
    """Wall time of each stage over one batch; "DB and the rest" is what the stages leave over
    (claims, reads, final states)."""
    from importlib import import_module

    from mailcore.sending.dispatch import outbound_dispatch_due

    ids = held_sends(user, mailbox, count, "profile")
    make_due(ids, ahead=0)
    spent: dict[str, float] = defaultdict(float)
    patched = []

    def timed(function, label):
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - started
        return wrapper

    for module_name, owner_name, name, label in STAGES:
        module = import_module(module_name)
        owner = getattr(module, owner_name, None) if owner_name else module
        if owner is not None and name in vars(owner) and label not in [p[3] for p in patched]:
            patched.append((owner, name, vars(owner)[name], label))
            setattr(owner, name, timed(vars(owner)[name], label))
    try:
        started = time.perf_counter()
        handled = 0
        while handled < count and (done := outbound_dispatch_due()):
            handled += done
        total = time.perf_counter() - started
    finally:
        for owner, name, original, _ in patched:
            setattr(owner, name, original)
    if not all_recorded(ids):
        raise BenchFailed("the profiled batch did not end `sent`")
    labels = list(dict.fromkeys(p[3] for p in patched))
    lines = [f"dispatch by stage, one batch of {count} in this process: {total / count * 1000:.2f} ms per message"]
    outer = sum(seconds for label, seconds in spent.items() if not label.startswith(" "))
    for label in [*labels, "DB and the rest"]:
        seconds = total - outer if label == "DB and the rest" else spent.get(label, 0.0)
        lines.append(f"  {label:<20}{seconds / count * 1000:8.3f} ms  {seconds / total * 100:5.1f} %")
    return "\n".join(lines)


def cprofile_batch(user, mailbox, count: int) -> str:
    """cProfile of one batch in this process, by own time (what to work on next)."""
    import cProfile
    import io
    import pstats

    from mailcore.sending.dispatch import outbound_dispatch_due

    make_due(held_sends(user, mailbox, count, "cprofile"), ahead=0)
    profiler = cProfile.Profile()
    profiler.enable()
    outbound_dispatch_due(limit=count)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
    return out.getvalue()


# --- the run ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200, help="sends due at the same moment, per round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per worker, alternating with the baseline")
    parser.add_argument("--quick", action="store_true", help="two rounds per worker (as the default; the table's runs)")
    parser.add_argument("--no-celery", action="store_true", help="only the embedded worker")
    parser.add_argument("--cprofile", action="store_true", help="also print cProfile of one batch")
    parser.add_argument("--embedded-workers", type=int, default=1,
                        help="also measure N embedded worker processes side by side (a row without target)")
    add_rows_argument(parser)
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    log(f"load average {load_average()} on {os.cpu_count()} CPUs")
    temp = Path(tempfile.mkdtemp(prefix="mailwell-dispatch-bench-"))
    (temp / "data").mkdir()
    sink = worker = None
    database_created = django_ready = False
    try:
        sink = Sink()
        env = product_env(temp / "data", sink.port)
        log(f"creating database {BENCH_DB}; migrating; seeding; sink on 127.0.0.1:{sink.port}")
        create_database(BENCH_DB)
        database_created = True
        manage(env, "migrate", "--noinput")
        seed_demo(env)
        os.environ.update(env)
        for name in STRIP_ENV:
            if name not in env:
                os.environ.pop(name, None)
        import django

        django.setup()
        django_ready = True
        user, mailbox = bench_sender()

        results = {}
        modes = [("embedded", embedded_worker)] + ([] if args.no_celery else [("celery", celery_worker)])
        if args.embedded_workers > 1:  # an experiment: what more processes would bring
            modes.append(("embedded-many", lambda env, temp: Workers(
                [embedded_worker(env, temp, index) for index in range(args.embedded_workers)])))
        for mode, start in modes:
            if mode == "celery":
                redis_flush()
            worker = start(env, temp)
            log(f"{worker.name} started; {rounds} round(s) of {args.messages} sends due at one moment")
            results[mode] = compare(sink, worker, user, mailbox, args.messages, rounds, warmup=10)
            worker.stop()
            worker = None
        profile = stage_profile(user, mailbox, min(args.messages, 50))

        print("\n" + profile)
        if args.cprofile:
            print(cprofile_batch(user, mailbox, min(args.messages, 50)))
        rows = []
        for mode, label in (("embedded", "embedded worker"), ("celery", "Celery")):
            if mode in results:
                figures = results[mode]
                rows.append(row(f"SMTP dispatch, {label}: {args.messages} due sends to a sink, vs bare signing",
                                figures["product_msgs_per_s"], figures["signed_msgs_per_s"], "msg/s", at_least=0.5,
                                note="baseline: each message DKIM-signed, then bare smtplib over one connection"))
                rows.append(row(f"SMTP dispatch, {label}: the same vs bare smtplib without signing",
                                figures["product_msgs_per_s"], figures["bare_msgs_per_s"], "msg/s",
                                note="baseline: bare smtplib, one connection reused, no signing"))
        if "embedded-many" in results:
            figures = results["embedded-many"]
            rows.append(row(f"SMTP dispatch, {args.embedded_workers} embedded workers (experiment)",
                            figures["product_msgs_per_s"], figures["bare_msgs_per_s"], "msg/s"))
        rows_report(rows, args.rows_file)
        return 0
    except BenchFailed as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 1
    finally:
        if worker is not None:
            worker.stop()
        if sink is not None:
            sink.stop()
        release_database(BENCH_DB, django_ready, database_created)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
