"""Webhook delivery benchmark: deliveries per second from the moment they fall due to the moment
the receiver has the last one, through the real worker processes (`manage.py worker`, and Celery
worker+beat with Redis), against bare httpx clients posting the same signed bodies to the same
receiver. One run, one machine, ratios.

    .venv/bin/python bench/webhooks.py [--quick] [--events 40] [--rounds 3] [--slow-delay 10]

Setup, in a fresh PostgreSQL database (mailwell_webhooks_bench, dropped at the end), through the
product's services: 5 Premium accounts x 10 endpoints (10 is the per-account limit) = 50 fast
endpoints, paths on one testkit.https_receiver; a 6th account with one endpoint on a second
receiver that answers after --slow-delay seconds (10 by default, the delivery timeout: it is
answered or timed out at the same moment). Both receivers speak HTTP/1.1 with keep-alive (as most
receivers do), each in a child process of its own on 127.0.0.1, with certificates from throwaway
CAs (WEBHOOK_CA_BUNDLE) and WEBHOOK_ALLOW_PRIVATE=true.

A product round emits --events email.received events per account with emit(), all in one
transaction: at its commit every delivery falls due at once, and the clock starts (an on_commit
callback registered first). It stops at the moment the receiver took the last of them
(CLOCK_MONOTONIC, shared by the processes). The worker runs as production runs it: its own
process, PostgreSQL, DEBUG off, WEBHOOK_CONCURRENCY at its default. Each delivery must arrive once,
signed with its endpoint's secret and naming its delivery (X-Service-Delivery), and its row must
end `delivered`, or the run fails. The baseline posts the same bodies, freshly signed, with httpx
over kept-alive connections: one client sequentially, and 16 threads with a client each; the
better of the two is the physical limit the product is held to. In each round the product goes
first (its rows give the bodies) and the two bare clients alternate their order; each phase starts
with an untimed round, so that every worker process (Celery has two) has run a batch.

Phases:
  embedded   `manage.py worker` (what `make run` starts without REDIS_URL): product vs bare.
  isolation  the same worker, the 50 fast endpoints with the slow one among them vs without; after
             each round with it the worker is killed (SIGKILL), the slow deliveries deleted and the
             worker started again, so that no round inherits the last one's slow work. Compared:
             the fast deliveries' time from the first to the last of them; the time before the
             first is the worker's pick-up (its poll, up to a second: noise five times the 10%
             measured here, and no concern of the slow endpoint, which comes later in the batch).
             Due-to-last times are in the JSON and the row's note.
  celery     `python -m celery -A config worker --beat` with REDIS_URL on a private redis-server
             (what `make run` starts with REDIS_URL; emit() enqueues the task on commit).

Prints the table rows and writes the figures to bench/results/webhooks-<UTC timestamp>.json.
Processes, database and temporary files are removed at the end, also on failure.
"""
import argparse
import multiprocessing
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import support
from support import (PYTHON, ROOT, BenchFailed, create_database, database_url, git_commit,
                     load_average, log, machine, manage, release_database, utc_timestamp, write_results)

BENCH_DB = "mailwell_webhooks_bench"
ENDPOINTS_PER_ACCOUNT = 10  # mailcore.webhooks.services.MAX_ENDPOINTS
FAST_ACCOUNTS = 5  # 5 x 10 = 50 fast endpoints
BARE_THREADS = 16
STRIP_ENV = ["REDIS_URL", "SMTP_URL", "MAIL_STORE", "DEBUG", "DB_CONN_MAX_AGE", "DJANGO_ENV", "DJANGO_SETTINGS_MODULE",
             "WEBHOOK_ALLOW_PRIVATE", "WEBHOOK_CA_BUNDLE", "WEBHOOK_CONCURRENCY", "LOG_LEVEL", "SWEEP_INTERVAL_SECONDS",
             "SECRET_KEY", "FIELD_ENCRYPTION_KEY"]


# --- receivers in their own processes -------------------------------------------------------------


def _serve_receiver(pipe, directory: str, delay: float) -> None:
    """Child process: one keep-alive testkit.https_receiver, answering the parent's questions over a pipe."""
    from testkit.https_receiver import https_receiver

    with https_receiver(Path(directory), keep_alive=True) as receiver:
        receiver.delay = delay
        pipe.send((receiver.port, receiver.ca_path))
        while True:
            command, argument = pipe.recv()
            if command == "count":
                pipe.send(len(receiver.hits))
            elif command == "hits":
                pipe.send([(hit.path, hit.signature, hit.body, hit.received_at, hit.delivery)
                           for hit in receiver.hits[argument:]])
            elif command == "connections":
                pipe.send(receiver.connections)
            else:
                pipe.send(None)
                return


class RemoteReceiver:
    """An HTTPS receiver in its own process, so that it does not share the sender's GIL."""

    def __init__(self, directory: Path, delay: float = 0.0):
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self.process = context.Process(target=_serve_receiver, args=(child, str(directory), delay), daemon=True)
        self.process.start()
        if not self._pipe.poll(30):
            raise BenchFailed("the HTTPS receiver did not start")
        self.port, self.ca_path = self._pipe.recv()
        self._lock = threading.Lock()

    def url(self, path: str) -> str:
        return f"https://localhost:{self.port}{path}"

    def _ask(self, command: str, argument=None):
        with self._lock:
            self._pipe.send((command, argument))
            return self._pipe.recv()

    def count(self) -> int:
        return self._ask("count")

    def connections(self) -> int:
        return self._ask("connections")

    def hits_since(self, start: int) -> list:
        return [SimpleNamespace(path=path, signature=signature, body=body, received_at=at, delivery=delivery)
                for path, signature, body, at, delivery in self._ask("hits", start)]

    def wait_for(self, count: int, budget_s: float, what: str) -> None:
        deadline = time.monotonic() + budget_s
        while (got := self.count()) < count:
            if time.monotonic() > deadline:
                raise BenchFailed(f"{what}: the receiver has {got} requests after {budget_s} s, expected {count}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.is_alive():
            try:
                self._ask("stop")
            except (OSError, EOFError):
                pass
            self.process.join(10)
            if self.process.is_alive():
                self.process.terminate()
                self.process.join(5)


# --- the worker as production runs it ------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_redis(temp: Path) -> tuple[subprocess.Popen, int]:
    binary = shutil.which("redis-server")
    if not binary:
        raise BenchFailed("redis-server is needed (apt-get install redis-server): Celery's broker")
    port = free_port()
    process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                "no", "--dir", str(temp)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, port
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise BenchFailed("redis-server did not start")


class Worker:
    """The background worker in a process group of its own (Celery forks children), as `make run`
    starts it: `manage.py worker` without REDIS_URL, Celery worker+beat with it."""

    def __init__(self, name: str, command: list[str], env: dict, log_path: Path):
        self.name, self.command, self.env, self.log_path = name, command, env, log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log_path.open("a") as out:
            self.process = subprocess.Popen(self.command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def kill(self) -> None:
        """SIGKILL to the whole group: no handler runs, claims in flight simply expire."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self.process = None

    def check(self) -> None:
        if self.process is None or self.process.poll() is not None:
            raise BenchFailed(f"the {self.name} worker is not running:\n{self.log_path.read_text()[-3000:]}")


# --- payloads ------------------------------------------------------------------------------------


def received_data(index: int) -> dict:
    """An email.received payload of the usual size."""
    return {
        "message_id": f"<bench-{index:06d}@sender.example>",
        "mailbox": "inbox@bench.mailwell.test",
        "from": "Benchmark Sender <sender@sender.example>",
        "subject": f"Benchmark message {index}",
        "received_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "thread_id": f"{index:016x}",
        "in_reply_to": None,
        "references": "",
        "is_reply": False,
        "preview": "Hello, this is a benchmark message. It carries an ordinary preview of two hundred characters "
                   "or so, which is what a receiver gets for most mail: the start of the text body, collapsed.",
        "has_attachments": False,
        "size_bytes": 4321,
        "authentication": {"spf": "pass", "dkim": "pass", "dmarc": "pass", "arc": "none"},
    }


class Bench:
    def __init__(self, fast: RemoteReceiver, slow: RemoteReceiver, per_account: int):
        self.fast, self.slow, self.per_account = fast, slow, per_account
        self.secrets: dict[str, str] = {}  # path -> signing secret
        self.account_counter = self.event_counter = 0
        self.fast_accounts = self.accounts(FAST_ACCOUNTS)
        for a, account in enumerate(self.fast_accounts):
            for e in range(ENDPOINTS_PER_ACCOUNT):
                self.endpoint(account, fast, f"/fast/{a}/{e}")
        [self.slow_account] = self.accounts(1)
        self.slow_endpoint = self.endpoint(self.slow_account, slow, "/slow")
        [self.warm_account] = self.accounts(1)
        self.endpoint(self.warm_account, fast, "/warm")

    # --- setup through the product's services ---------------------------------------------------

    def accounts(self, count: int) -> list:
        from mailcore.accounts.services import user_create_with_account

        made = []
        for _ in range(count):
            self.account_counter += 1
            user = user_create_with_account(email=f"bench{self.account_counter}@bench.mailwell.test", password=None,
                                            plan_code="premium")
            made.append(user.account)
        return made

    def endpoint(self, account, receiver: RemoteReceiver, path: str):
        from mailcore.webhooks.services import endpoint_create

        endpoint, secret = endpoint_create(account=account, url=receiver.url(path), events=["email.received"])
        self.secrets[path] = secret
        return endpoint

    # --- the product ------------------------------------------------------------------------------

    def emit_at_once(self, accounts: list, per_account: int) -> float:
        """emit() per_account events per account in one transaction; the monotonic moment it committed."""
        from django.db import transaction

        from mailcore.events.services import emit

        due: dict[str, float] = {}
        with transaction.atomic():
            transaction.on_commit(lambda: due.setdefault("at", time.monotonic()))  # runs before emit's enqueues
            for _ in range(per_account):
                self.event_counter += 1
                for account in accounts:
                    emit(account=account, name="email.received", data=received_data(self.event_counter))
        return due["at"]

    def warm_up(self, worker: Worker, events: int = 5) -> None:
        """Wait until the worker delivers: a process just started is not timed booting Django."""
        before = self.fast.count()
        self.emit_at_once([self.warm_account], events)
        deadline = time.monotonic() + 90
        while self.fast.count() < before + events:
            worker.check()
            if time.monotonic() > deadline:
                raise BenchFailed(f"the {worker.name} worker delivered nothing within 90 s")
            time.sleep(0.1)

    def product(self, worker: Worker, with_slow: bool = False) -> dict:
        """One round: every fast delivery from due to the receiver's last; checked at the receiver and in the DB."""
        from mailcore.events.models import WebhookDelivery

        worker.check()
        last_id = WebhookDelivery.objects.order_by("-id").values_list("id", flat=True).first() or 0
        fast_before = self.fast.count()
        expected = self.per_account * len(self.fast_accounts) * ENDPOINTS_PER_ACCOUNT
        accounts = self.fast_accounts + ([self.slow_account] if with_slow else [])
        due = self.emit_at_once(accounts, self.per_account)
        self.fast.wait_for(fast_before + expected, 120, f"{worker.name} worker")
        hits = self.fast.hits_since(fast_before)
        seconds = max(hit.received_at for hit in hits) - due
        first = min(hit.received_at for hit in hits) - due  # the worker's pick-up: its poll, Celery's queue
        fast_rows = WebhookDelivery.objects.filter(id__gt=last_id).exclude(endpoint=self.slow_endpoint)
        self.check_hits(hits, {str(pk) for pk in fast_rows.values_list("id", flat=True)})
        deadline = time.monotonic() + 30
        while fast_rows.exclude(status=WebhookDelivery.Status.DELIVERED).exists():
            if time.monotonic() > deadline:
                states = list(fast_rows.exclude(status="delivered").values_list("status", "last_error")[:3])
                raise BenchFailed(f"{worker.name}: deliveries received but not recorded delivered, e.g. {states}")
            time.sleep(0.1)
        return {"deliveries": expected, "seconds": seconds, "first_s": first, "span_s": seconds - first}

    def check_hits(self, hits: list, delivery_ids: set[str]) -> None:
        """Each delivery once, signed with its endpoint's secret, naming its delivery row."""
        from testkit.https_receiver import verify

        named = [hit.delivery for hit in hits]
        if len(named) != len(set(named)) or set(named) != delivery_ids:
            raise BenchFailed(f"the receiver got {len(hits)} requests naming {len(set(named))} deliveries; "
                              f"expected each of {len(delivery_ids)} once")
        bad = [hit for hit in hits if not verify(self.secrets.get(hit.path, ""), hit.signature, hit.body)]
        if bad:
            raise BenchFailed(f"{len(bad)} of {len(hits)} requests had a bad signature, e.g. {bad[0].path}")

    def forget_slow(self) -> None:
        from mailcore.events.models import WebhookDelivery

        WebhookDelivery.objects.filter(endpoint=self.slow_endpoint).delete()

    # --- the baseline -----------------------------------------------------------------------------

    def last_bodies(self) -> list[tuple[str, str, str, int]]:
        """(url, secret, body, delivery id) of the last round's fast deliveries, in the order they fell due."""
        from mailcore.fieldcrypt import decrypt
        from mailcore.webhooks.delivery import envelope_body
        from mailcore.events.models import WebhookDelivery

        count = self.per_account * len(self.fast_accounts) * ENDPOINTS_PER_ACCOUNT
        rows = (WebhookDelivery.objects.filter(endpoint__account__in=self.fast_accounts)
                .select_related("endpoint", "event").order_by("-id")[:count])
        return [(row.endpoint.url, decrypt(row.endpoint.secret_encrypted), envelope_body(row.event, row.endpoint),
                 row.pk) for row in reversed(rows)]

    def bare(self, items: list, threads: int) -> dict:
        """POST every body, signed now, over kept-alive connections (one httpx.Client per thread)."""
        import httpx

        from mailcore.webhooks.delivery import signature_header

        context = ssl.create_default_context(cafile=os.environ["WEBHOOK_CA_BUNDLE"])
        local = threading.local()
        clients: list = []
        failures: list = []

        def post(item) -> None:
            url, secret, body, delivery_id = item
            client = getattr(local, "client", None)
            if client is None:
                client = local.client = httpx.Client(verify=context, timeout=10, follow_redirects=False)
                clients.append(client)
            response = client.post(url, content=body.encode(), headers={
                "Content-Type": "application/json", "User-Agent": "bench", "X-Service-Delivery": str(delivery_id),
                "X-Service-Signature": signature_header(secret, body)})
            if not 200 <= response.status_code < 300:
                failures.append(response.status_code)

        before = self.fast.count()
        started = time.monotonic()
        if threads <= 1:
            for item in items:
                post(item)
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                list(pool.map(post, items))
        for client in clients:
            client.close()
        if failures:
            raise BenchFailed(f"bare client: {len(failures)} requests failed, e.g. {failures[:3]}")
        hits = self.fast.hits_since(before)
        if len(hits) != len(items):
            raise BenchFailed(f"bare client: the receiver got {len(hits)} requests, expected {len(items)}")
        return {"deliveries": len(items), "seconds": max(hit.received_at for hit in hits) - started}


def summary(runs: list[dict]) -> dict:
    count = sum(run["deliveries"] for run in runs)
    seconds = sum(run["seconds"] for run in runs)
    figures = {"count": count, "seconds": round(seconds, 3), "per_s": count / seconds,
               "seconds_per_round": [round(run["seconds"], 3) for run in runs]}
    if "first_s" in runs[0]:
        figures["first_delivery_s_per_round"] = [round(run["first_s"], 3) for run in runs]
        figures["first_to_last_s"] = round(sum(run["span_s"] for run in runs), 3)
    return figures


def throughput_phase(bench: Bench, worker: Worker, rounds: int) -> dict:
    """Rounds of product, bare sequential and bare threads over the same bodies, in alternating order."""
    runs: dict[str, list] = {"product": [], "bare_sequential": [], "bare_threads": []}
    log(f"{worker.name}: a round untimed, so that every worker process has run a batch")
    bench.product(worker)
    for index in range(rounds):
        log(f"{worker.name}, round {index + 1}/{rounds}: product")
        runs["product"].append(bench.product(worker))
        items = bench.last_bodies()
        bares = [("bare_sequential", 1), ("bare_threads", BARE_THREADS)]
        for key, threads in (bares if index % 2 else bares[::-1]):
            log(f"{worker.name}, round {index + 1}/{rounds}: {key.replace('_', ' ')}")
            runs[key].append(bench.bare(items, threads))
    result = {key: summary(figures) for key, figures in runs.items()}
    best = max(result["bare_sequential"]["per_s"], result["bare_threads"]["per_s"])
    result["best_bare_per_s"] = best
    result["ratio"] = result["product"]["per_s"] / best
    return result


def isolation_phase(bench: Bench, worker: Worker, rounds: int) -> dict:
    """Rounds of the fast deliveries alone and with the slow endpoint's among them, alternating."""
    runs: dict[str, list] = {"without_slow": [], "with_slow": []}
    for index in range(rounds):
        order = [False, True] if index % 2 == 0 else [True, False]
        for with_slow in order:
            key = "with_slow" if with_slow else "without_slow"
            log(f"isolation, round {index + 1}/{rounds}: {key.replace('_', ' ')}")
            runs[key].append(bench.product(worker, with_slow=with_slow))
            if with_slow:  # nothing of it may weigh on the next round: a fresh worker, no slow rows left
                worker.kill()
                bench.forget_slow()
                worker.start()
                bench.warm_up(worker)
    result = {key: summary(figures) for key, figures in runs.items()}
    result["ratio"] = result["with_slow"]["first_to_last_s"] / result["without_slow"]["first_to_last_s"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=40,
                        help="events per fast account per round (default 40: 2,000 deliveries to 50 endpoints)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per phase (default 3)")
    parser.add_argument("--slow-delay", type=float, default=10.0,
                        help="seconds the slow endpoint waits before answering (default 10)")
    parser.add_argument("--quick", action="store_true",
                        help="2 rounds (make bench); fewer deliveries per round would leave the isolation "
                             "row measuring spans under a second, where this machine's noise is above 10%%")
    support.add_rows_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.rounds = 2

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    run_started = time.perf_counter()
    loadavg_start = load_average()
    temp = Path(tempfile.mkdtemp(prefix="mailwell-webhooks-bench-"))
    database_created = django_ready = False
    receivers: list[RemoteReceiver] = []
    workers: list[Worker] = []
    redis = None
    try:
        (temp / "fast").mkdir()
        (temp / "slow").mkdir()
        fast = RemoteReceiver(temp / "fast")
        receivers.append(fast)
        slow = RemoteReceiver(temp / "slow", delay=args.slow_delay)
        receivers.append(slow)
        bundle = temp / "ca-bundle.pem"
        bundle.write_text(Path(fast.ca_path).read_text() + Path(slow.ca_path).read_text())
        redis, redis_port = start_redis(temp)
        redis_url = f"redis://127.0.0.1:{redis_port}/0"

        for name in STRIP_ENV:
            os.environ.pop(name, None)
        # Production settings refuse WEBHOOK_ALLOW_PRIVATE (loopback receivers), so: development
        # settings with what production changes that matters here (PostgreSQL, DEBUG off).
        os.environ.update(DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=database_url(BENCH_DB),
                          DEBUG="false", WEBHOOK_ALLOW_PRIVATE="true", WEBHOOK_CA_BUNDLE=str(bundle),
                          LOG_LEVEL="WARNING")
        worker_env = dict(os.environ)

        def data_dir(name: str) -> str:
            (temp / name).mkdir()
            return str(temp / name)

        os.environ.update(DATA_DIR=data_dir("bench-data"), REDIS_URL=redis_url)  # the emitting side: Celery's broker
        log(f"creating database {BENCH_DB}; migrating")
        create_database(BENCH_DB)
        database_created = True
        manage(dict(os.environ), "migrate", "--noinput")

        import django

        django.setup()
        django_ready = True
        from django.conf import settings

        bench = Bench(fast, slow, args.events)
        embedded = Worker("embedded", [PYTHON, "manage.py", "worker"],
                          {**worker_env, "DATA_DIR": data_dir("embedded-data")}, temp / "embedded.log")
        celery = Worker("celery", [PYTHON, "-m", "celery", "-A", "config", "worker", "--beat", "--loglevel", "WARNING",
                                   "--schedule", str(temp / "celerybeat-schedule")],
                        {**worker_env, "DATA_DIR": data_dir("celery-data"), "REDIS_URL": redis_url},
                        temp / "celery.log")
        workers += [embedded, celery]

        settings.REDIS_URL = ""  # embedded mode: emit() enqueues nothing, the worker's sweep finds the rows
        log("embedded worker: starting, warming up")
        embedded.start()
        bench.warm_up(embedded)
        phases = {"embedded": throughput_phase(bench, embedded, args.rounds),
                  "isolation": isolation_phase(bench, embedded, args.rounds)}
        embedded.kill()

        settings.REDIS_URL = redis_url  # emit() enqueues the delivery task on commit, as with REDIS_URL
        log("celery worker+beat: starting, warming up")
        celery.start()
        bench.warm_up(celery)
        phases["celery"] = throughput_phase(bench, celery, args.rounds)
        celery.kill()

        deliveries = args.events * FAST_ACCOUNTS * ENDPOINTS_PER_ACCOUNT
        rows = []
        for key, label in (("embedded", "embedded worker"), ("celery", "Celery worker")):
            phase = phases[key]
            rows.append(support.row(
                f"Webhooks, {label}: {deliveries} deliveries to 50 fast endpoints (deliveries/s)",
                phase["product"]["per_s"], phase["best_bare_per_s"], "deliveries/s", at_least=0.6,
                note=f"bare sequential {phase['bare_sequential']['per_s']:.0f}/s, "
                     f"{BARE_THREADS} threads {phase['bare_threads']['per_s']:.0f}/s, keep-alive"))
        isolation = phases["isolation"]
        rows.append(support.row(
            f"Webhooks: fast endpoints with one {args.slow_delay:g} s endpoint vs without (s)",
            isolation["with_slow"]["first_to_last_s"], isolation["without_slow"]["first_to_last_s"], "s", at_most=1.1,
            note=f"{deliveries} fast deliveries per round, {args.rounds} rounds each, embedded worker; first to last "
                 f"fast delivery (due to last: {isolation['with_slow']['seconds']:.2f} s vs "
                 f"{isolation['without_slow']['seconds']:.2f} s)"))
        results = {
            "benchmark": "webhooks",
            "timestamp": utc_timestamp(),
            "machine": machine(loadavg_start=loadavg_start, loadavg_end=load_average()),
            "commit": git_commit(),
            "config": {"events_per_account": args.events, "fast_accounts": FAST_ACCOUNTS,
                       "endpoints_per_account": ENDPOINTS_PER_ACCOUNT, "deliveries_per_round": deliveries,
                       "rounds": args.rounds, "slow_delay_s": args.slow_delay, "bare_threads": BARE_THREADS,
                       "database": "postgresql", "receiver": "testkit.https_receiver, HTTP/1.1 keep-alive, own process",
                       "fast_receiver_connections": fast.connections()},
            "phases": phases,
            "rows": rows,
        }
        write_results(results, "webhooks", run_started)
        support.rows_report(rows, args.rows_file)
        return 0
    except BenchFailed as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 1
    finally:
        for worker in workers:
            worker.kill()
        for receiver in receivers:
            receiver.stop()
        if redis is not None:
            redis.terminate()
            redis.wait(timeout=10)
        release_database(BENCH_DB, django_ready, database_created)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
