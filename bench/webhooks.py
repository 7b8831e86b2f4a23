"""Webhook delivery benchmark: deliveries per second through the product's path
(`emit` -> delivery rows -> `webhooks_deliver_due()`) to a local HTTPS receiver, against a bare
httpx loop posting the same signed bodies to the same receiver. One run, one machine, ratios.

    .venv/bin/python bench/webhooks.py [--events 200] [--multi-events 4] [--rounds 2] [--slow-delay 2]
                                       [--concurrency 16] [--profile]

Scenarios, each on its own Premium accounts (user_create_with_account) with endpoints made by
endpoint_create, in a fresh PostgreSQL database (mailwell_webhooks_bench, dropped at the end):

  single        1 endpoint, --events email.received events per round; also run with
                WEBHOOK_CONCURRENCY=1 (the worker's sequential path) against the same baseline.
  50 endpoints  5 accounts x 10 endpoints (10 is the per-account limit), all fast; --multi-events
                events per account per round, emitted round-robin across the accounts.
  one slow      the same, but one of the 50 endpoints answers after --slow-delay seconds.

The fast endpoints are paths on one testkit.https_receiver, the slow one is a second; each
runs in a child process (so it does not share this process's GIL) on 127.0.0.1, with certificates
from throwaway CAs (WEBHOOK_CA_BUNDLE) and WEBHOOK_ALLOW_PRIVATE=true. A round emits the events,
then drains them with `webhooks_deliver_due()` until it claims nothing ("product"), and posts the
same bodies, signed afresh, with one httpx.Client per thread, sequentially and with
WEBHOOK_CONCURRENCY threads ("bare"); the order alternates between rounds so drift in the
machine's load weighs on both sides. The receiver speaks HTTP/1.0, so every request of both sides
is a new TLS connection. Every delivery must arrive with a valid signature, or the run fails.
Besides rates it records the time spent in the claim UPDATEs (by wrapping delivery._claim in this
process) and the PostgreSQL sessions opened while delivering (pg_stat_database.sessions).

Prints a table and writes the figures to bench/results/webhooks-<UTC timestamp>.json. Receivers,
database and temporary files are removed at the end, also on failure. Exit status 0 on success.
"""
import argparse
import cProfile
import io
import multiprocessing
import os
import pstats
import shutil
import signal
import ssl
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

from support import (PG_ADMIN_URL, BenchFailed, create_database, database_url, git_commit,
                     load_average, log, machine, manage, release_database, utc_timestamp,
                     write_results)

BENCH_DB = "mailwell_webhooks_bench"
DATABASE_URL = database_url(BENCH_DB)
ENDPOINTS_PER_ACCOUNT = 10  # mailcore.webhooks.services.MAX_ENDPOINTS
MULTI_ACCOUNTS = 5  # 5 x 10 = 50 endpoints
STRIP_ENV = ["REDIS_URL", "SMTP_URL", "MAIL_STORE", "DEBUG", "DB_CONN_MAX_AGE", "DJANGO_ENV", "DJANGO_SETTINGS_MODULE",
             "WEBHOOK_ALLOW_PRIVATE", "WEBHOOK_CA_BUNDLE", "WEBHOOK_CONCURRENCY", "LOG_LEVEL"]


def pg_sessions() -> int:
    """Sessions ever opened on the bench database (pg_stat_database.sessions, PostgreSQL 14+)."""
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as connection:
        connection.execute("SELECT pg_stat_clear_snapshot()")
        row = connection.execute("SELECT sessions FROM pg_stat_database WHERE datname = %s", (BENCH_DB,)).fetchone()
        return int(row[0]) if row and row[0] is not None else -1


class ClaimTimer:
    """Wraps mailcore.webhooks.delivery._claim (in this process only) to add up the time spent claiming:
    webhooks_deliver_due() claims its rows one UPDATE at a time before any is sent."""

    def __init__(self):
        from mailcore.webhooks import delivery

        self.module, self.original, self.seconds = delivery, delivery._claim, 0.0

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        delivery._claim = timed

    def close(self) -> None:
        self.module._claim = self.original


def profile_text(profiler: cProfile.Profile, title: str, lines: int = 28) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(lines)
    return f"{title}\n{out.getvalue()}"


def _serve_receiver(pipe, directory: str, delay: float) -> None:
    """Child process: one testkit.https_receiver, answering the parent's questions over a pipe."""
    from testkit.https_receiver import https_receiver

    with https_receiver(Path(directory)) as receiver:
        receiver.delay = delay
        pipe.send((receiver.port, receiver.ca_path))
        while True:
            command, argument = pipe.recv()
            if command == "count":
                pipe.send(len(receiver.hits))
            elif command == "hits":
                pipe.send([(hit.path, hit.signature, hit.body, hit.received_at) for hit in receiver.hits[argument:]])
            else:
                pipe.send(None)
                return


class RemoteReceiver:
    """An HTTPS receiver in its own process, so that it does not share this process's GIL (and CPU)."""

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

    def hits_since(self, start: int) -> list:
        return [SimpleNamespace(path=path, signature=signature, body=body, received_at=at)
                for path, signature, body, at in self._ask("hits", start)]

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
    }


class Bench:
    def __init__(self, fast, slow, concurrency: int):
        self.fast, self.slow, self.concurrency = fast, slow, concurrency
        self.secrets: dict[tuple[int, str], str] = {}  # (port, path) -> signing secret
        self.account_counter = 0
        self.event_counter = 0

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

    def endpoint(self, account, receiver, path: str):
        from mailcore.webhooks.services import endpoint_create

        endpoint, secret = endpoint_create(account=account, url=receiver.url(path), events=["email.received"])
        self.secrets[(receiver.port, path)] = secret
        return endpoint

    # --- the product ------------------------------------------------------------------------------

    def emit_round_robin(self, accounts: list, per_account: int) -> tuple[list[int], float]:
        """Events through the product's emit(), one account after the other; the new delivery rows' ids."""
        from mailcore.events.services import emit
        from mailcore.events.models import WebhookDelivery

        last = WebhookDelivery.objects.order_by("-id").values_list("id", flat=True).first() or 0
        started = time.perf_counter()
        for _ in range(per_account):
            self.event_counter += 1
            for account in accounts:
                emit(account=account, name="email.received", data=received_data(self.event_counter))
        elapsed = time.perf_counter() - started
        ids = list(WebhookDelivery.objects.filter(id__gt=last, endpoint__account__in=accounts)
                   .values_list("id", flat=True))
        return ids, elapsed

    @staticmethod
    def drain(budget_s: float = 150) -> tuple[int, int]:
        from mailcore.webhooks.delivery import webhooks_deliver_due

        handled, calls, deadline = 0, 0, time.monotonic() + budget_s
        while count := webhooks_deliver_due():
            handled += count
            calls += 1
            if time.monotonic() > deadline:
                raise BenchFailed(f"delivery still running after {budget_s} s ({handled} attempts)")
        return handled, calls

    def product(self, ids: list[int]) -> dict:
        """Drain the pending deliveries `ids` with webhooks_deliver_due(); check every one arrived, signed."""
        from mailcore.events.models import WebhookDelivery

        expected = len(ids)
        hits_before = {receiver.port: receiver.count() for receiver in (self.fast, self.slow)}
        time.sleep(0.5)  # let the statistics collector count earlier sessions
        sessions_before = pg_sessions()
        claims = ClaimTimer()
        started_mono = time.monotonic()
        started = time.perf_counter()
        try:
            attempts, calls = self.drain()
        finally:
            claims.close()
        elapsed = time.perf_counter() - started
        time.sleep(1.0)  # PostgreSQL flushes session statistics at most once a second
        sessions_opened = pg_sessions() - sessions_before
        rows = WebhookDelivery.objects.filter(id__in=ids)
        delivered = rows.filter(status=WebhookDelivery.Status.DELIVERED).count()
        if attempts != expected or delivered != expected:
            states = list(rows.exclude(status=WebhookDelivery.Status.DELIVERED).values_list("status", "last_error")[:3])
            raise BenchFailed(f"expected {expected} deliveries; {attempts} attempts, {delivered} delivered; "
                              f"e.g. {states}")
        fast_hits = self.fast.hits_since(hits_before[self.fast.port])
        self.check_signatures(fast_hits + self.slow.hits_since(hits_before[self.slow.port]), expected)
        # time.monotonic() is CLOCK_MONOTONIC, the same clock in the receiver's process
        fast_arrivals = sorted(hit.received_at - started_mono for hit in fast_hits)
        return {
            "deliveries": expected,
            "seconds": elapsed,
            "deliver_due_calls": calls,
            "claim_seconds": claims.seconds,
            "pg_sessions_opened": sessions_opened,
            "fast_last_arrival_s": fast_arrivals[-1],
        }

    def check_signatures(self, hits: list, expected: int) -> None:
        from testkit.https_receiver import verify

        if len(hits) != expected:
            raise BenchFailed(f"the receivers got {len(hits)} requests, expected {expected}")
        by_path = {path: secret for (port, path), secret in self.secrets.items()}
        bad = [hit for hit in hits if not verify(by_path.get(hit.path, ""), hit.signature, hit.body)]
        if bad:
            raise BenchFailed(f"{len(bad)} of {len(hits)} requests had a bad signature, e.g. {bad[0].path}")

    # --- the baseline -----------------------------------------------------------------------------

    @staticmethod
    def bodies_of(ids: list[int]) -> list[tuple[str, str, str]]:
        """(url, secret, body) of the deliveries `ids`, in the order webhooks_deliver_due() takes them."""
        from mailcore.fieldcrypt import decrypt
        from mailcore.webhooks.delivery import envelope_body
        from mailcore.events.models import WebhookDelivery

        rows = (WebhookDelivery.objects.filter(id__in=ids).select_related("endpoint", "event")
                .order_by("next_attempt_at", "id"))
        return [(row.endpoint.url, decrypt(row.endpoint.secret_encrypted), envelope_body(row.event, row.endpoint))
                for row in rows]

    def bare(self, items: list[tuple[str, str, str]], threads: int) -> dict:
        """POST every body, signed now, with one httpx.Client per thread (what a minimal sender does)."""
        import httpx

        from mailcore.webhooks.delivery import signature_header

        context = ssl.create_default_context(cafile=os.environ["WEBHOOK_CA_BUNDLE"])
        local = threading.local()
        clients: list = []
        failures: list = []

        def post(item) -> None:
            url, secret, body = item
            client = getattr(local, "client", None)
            if client is None:
                client = local.client = httpx.Client(verify=context, timeout=10, follow_redirects=False)
                clients.append(client)
            response = client.post(url, content=body.encode(), headers={
                "Content-Type": "application/json", "User-Agent": "bench",
                "X-Service-Signature": signature_header(secret, body)})
            if not 200 <= response.status_code < 300:
                failures.append(response.status_code)

        hits_before = self.fast.count() + self.slow.count()
        started = time.perf_counter()
        if threads <= 1:
            for item in items:
                post(item)
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                list(pool.map(post, items))
        elapsed = time.perf_counter() - started
        for client in clients:
            client.close()
        if failures:
            raise BenchFailed(f"bare client: {len(failures)} requests failed, e.g. {failures[:3]}")
        got = self.fast.count() + self.slow.count() - hits_before
        if got != len(items):
            raise BenchFailed(f"bare client: the receivers got {got} requests, expected {len(items)}")
        return {"requests": len(items), "seconds": elapsed}

    # --- one scenario -----------------------------------------------------------------------------

    def scenario(self, name: str, accounts: list, per_account: int, rounds: int, bare: bool = True) -> dict:
        """`rounds` rounds of: emit, then the product's drain and the bare loops over the same bodies, in
        alternating order (product first in odd rounds, last in even ones) so that drift in the machine's
        load weighs on both sides; rates are totals over the rounds."""
        runs: dict[str, list] = {"product": [], "bare_sequential": [], "bare_concurrent": []}
        emit_seconds = emitted = 0.0
        for round_index in range(rounds):
            ids, seconds = self.emit_round_robin(accounts, per_account)
            emit_seconds, emitted = emit_seconds + seconds, emitted + per_account * len(accounts)
            items = self.bodies_of(ids) if bare else []
            steps = [("product", lambda: self.product(ids))]
            if bare:
                steps += [("bare_concurrent", lambda: self.bare(items, self.concurrency)),
                          ("bare_sequential", lambda: self.bare(items, 1))]
            if round_index % 2:
                steps.reverse()
            for key, step in steps:
                log(f"{name}, round {round_index + 1}/{rounds}: {key.replace('_', ' ')}, {len(ids)} deliveries")
                runs[key].append(step())
        result = {"emit_events_per_s": emitted / emit_seconds}
        for key, figures in runs.items():
            if not figures:
                continue
            count = sum(run.get("deliveries", run.get("requests")) for run in figures)
            seconds = sum(run["seconds"] for run in figures)
            summary = {"count": count, "seconds": round(seconds, 3), "per_s": count / seconds,
                       "per_round_per_s": [round(run.get("deliveries", run.get("requests")) / run["seconds"], 1)
                                           for run in figures]}
            if key == "product":
                summary.update(
                    deliver_due_calls=sum(run["deliver_due_calls"] for run in figures),
                    claim_seconds=round(sum(run["claim_seconds"] for run in figures), 3),
                    pg_sessions_opened=sum(run["pg_sessions_opened"] for run in figures),
                    fast_last_arrival_s=[round(run["fast_last_arrival_s"], 3) for run in figures],
                    seconds_per_round=[round(run["seconds"], 3) for run in figures],
                )
            result[key] = summary
        for key in ("bare_sequential", "bare_concurrent"):
            if key in result:
                result[f"ratio_over_{key}"] = result["product"]["per_s"] / result[key]["per_s"]
        return result


def table(results: dict) -> str:
    config = results["config"]
    conc = config["concurrency"]
    lines = [
        "",
        f"Webhook delivery to a local HTTPS receiver (own process, 127.0.0.1, a new TLS connection per request), "
        f"PostgreSQL, WEBHOOK_CONCURRENCY={conc}, {config['rounds']} alternating rounds per scenario, "
        f"slow endpoint answers after {config['slow_delay_s']:g} s",
        f"  {'scenario':<36}{'deliv.':>7}{'product/s':>10}{'bare seq/s':>11}{f'bare {conc}t/s':>11}"
        f"{'prod/seq':>9}{'prod/' + str(conc) + 't':>9}{'claim s':>9}{'PG conns':>9}",
    ]
    labels = {"single": "1 endpoint", "single_sequential": "1 endpoint, WEBHOOK_CONCURRENCY=1",
              "fanout": "50 endpoints, all fast", "slow": "50 endpoints, one slow"}
    for key, label in labels.items():
        row = results["scenarios"][key]
        product = row["product"]
        seq = row.get("bare_sequential") or results["scenarios"]["single"]["bare_sequential"]
        conc_row = row.get("bare_concurrent") or results["scenarios"]["single"]["bare_concurrent"]
        lines.append(
            f"  {label:<36}{product['count']:>7}{product['per_s']:>10.1f}{seq['per_s']:>11.1f}"
            f"{conc_row['per_s']:>11.1f}"
            f"{product['per_s'] / seq['per_s']:>9.2f}{product['per_s'] / conc_row['per_s']:>9.2f}"
            f"{product['claim_seconds']:>9.2f}{product['pg_sessions_opened']:>9}")
    effect = results["slow_effect"]
    lines += [
        "",
        f"  one slow endpoint among 50: product x{effect['product_throughput_ratio']:.2f} the all-fast rate; the last "
        f"fast delivery of a round arrived after {effect['fast_done_s_all_fast']} s with all fast, "
        f"{effect['fast_done_s_one_slow']} s with one slow ({effect['slow_deliveries']} slow deliveries over "
        f"{effect['deliver_due_calls']} webhooks_deliver_due() calls, each waiting for its slowest delivery); "
        f"bare {conc}-thread client x{effect['bare_concurrent_throughput_ratio']:.2f}, "
        f"bare sequential x{effect['bare_sequential_throughput_ratio']:.2f}",
        "  (ratios: product deliveries/s over bare requests/s; claim s: time in webhooks_deliver_due()'s "
        "one-row-at-a-time claim UPDATEs, before any request of its batch; PG conns: PostgreSQL sessions opened "
        "while delivering)",
        "  (events created with emit() beforehand, not timed above: "
        + ", ".join(f"{key} {row['emit_events_per_s']:.0f}/s" for key, row in results["scenarios"].items())
        + f"; load average {results['machine']['loadavg_start']} at start, {results['machine']['loadavg_end']} at end)",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200,
                        help="events per round for the 1-endpoint scenarios (default 200)")
    parser.add_argument("--multi-events", type=int, default=4,
                        help="events per account per round in the 50-endpoint scenarios (5 accounts; default 4, "
                             "200 deliveries)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per scenario (default 2)")
    parser.add_argument("--slow-delay", type=float, default=2.0, help="seconds the slow endpoint waits (default 2)")
    parser.add_argument("--concurrency", type=int, default=16, help="WEBHOOK_CONCURRENCY (default 16)")
    parser.add_argument("--profile", action="store_true",
                        help="also print cProfile of 200 deliveries with WEBHOOK_CONCURRENCY=1 and of the bare loop")
    args = parser.parse_args()

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    run_started = time.perf_counter()
    loadavg_start = load_average()
    temp = Path(tempfile.mkdtemp(prefix="mailwell-webhooks-bench-"))
    database_created = django_ready = False
    receivers: list[RemoteReceiver] = []
    try:
        (temp / "fast").mkdir()
        (temp / "slow").mkdir()
        fast = RemoteReceiver(temp / "fast")
        receivers.append(fast)
        slow = RemoteReceiver(temp / "slow", delay=args.slow_delay)
        receivers.append(slow)
        bundle = temp / "ca-bundle.pem"
        bundle.write_text(Path(fast.ca_path).read_text() + Path(slow.ca_path).read_text())

        data_dir = temp / "data"
        data_dir.mkdir()
        for name in STRIP_ENV:
            os.environ.pop(name, None)
        os.environ.update(
            DJANGO_SETTINGS_MODULE="portal.settings",
            DATABASE_URL=DATABASE_URL,
            DATA_DIR=str(data_dir),
            WEBHOOK_ALLOW_PRIVATE="true",
            WEBHOOK_CA_BUNDLE=str(bundle),
            WEBHOOK_CONCURRENCY=str(args.concurrency),
            LOG_LEVEL="WARNING",
        )
        log(f"creating database {BENCH_DB}; migrating (DATA_DIR {data_dir})")
        create_database(BENCH_DB)
        database_created = True
        manage(dict(os.environ), "migrate", "--noinput")

        import django

        django.setup()
        django_ready = True
        from django.conf import settings

        bench = Bench(fast, slow, args.concurrency)
        scenarios: dict = {}
        profiles: dict = {}

        # Warm-up: imports, connections, the SSL context, the first TLS handshakes.
        [warm] = bench.accounts(1)
        bench.endpoint(warm, fast, "/warm")
        bench.scenario("warm-up", [warm], 20, 1)

        [single] = bench.accounts(1)
        bench.endpoint(single, fast, "/single")
        scenarios["single"] = bench.scenario("single", [single], args.events, args.rounds)

        settings.WEBHOOK_CONCURRENCY = 1
        try:
            [single_seq] = bench.accounts(1)
            bench.endpoint(single_seq, fast, "/single-seq")
            scenarios["single_sequential"] = bench.scenario("single, WEBHOOK_CONCURRENCY=1", [single_seq], args.events,
                                                            args.rounds, bare=False)
        finally:
            settings.WEBHOOK_CONCURRENCY = args.concurrency
        for key in ("bare_sequential", "bare_concurrent"):
            scenarios["single_sequential"][f"ratio_over_{key}"] = (
                scenarios["single_sequential"]["product"]["per_s"] / scenarios["single"][key]["per_s"])

        # 50 endpoints: the per-account limit is 10 (MAX_ENDPOINTS), so 5 accounts of 10 each.
        fanout_accounts = bench.accounts(MULTI_ACCOUNTS)
        for a, account in enumerate(fanout_accounts):
            for e in range(ENDPOINTS_PER_ACCOUNT):
                bench.endpoint(account, fast, f"/fanout/{a}/{e}")
        scenarios["fanout"] = bench.scenario("50 endpoints", fanout_accounts, args.multi_events, args.rounds)

        slow_accounts = bench.accounts(MULTI_ACCOUNTS)
        for a, account in enumerate(slow_accounts):
            for e in range(ENDPOINTS_PER_ACCOUNT):
                if (a, e) == (0, 0):
                    bench.endpoint(account, slow, "/slow")
                else:
                    bench.endpoint(account, fast, f"/slowrun/{a}/{e}")
        scenarios["slow"] = bench.scenario("50 endpoints, one slow", slow_accounts, args.multi_events, args.rounds)

        fan, slw = scenarios["fanout"], scenarios["slow"]
        slow_effect = {
            "slow_deliveries": args.multi_events * args.rounds,
            "deliver_due_calls": slw["product"]["deliver_due_calls"],
            "product_throughput_ratio": slw["product"]["per_s"] / fan["product"]["per_s"],
            "bare_concurrent_throughput_ratio": slw["bare_concurrent"]["per_s"] / fan["bare_concurrent"]["per_s"],
            "bare_sequential_throughput_ratio": slw["bare_sequential"]["per_s"] / fan["bare_sequential"]["per_s"],
            "fast_done_s_all_fast": fan["product"]["fast_last_arrival_s"],
            "fast_done_s_one_slow": slw["product"]["fast_last_arrival_s"],
        }

        if args.profile:
            settings.WEBHOOK_CONCURRENCY = 1
            try:
                [profiled] = bench.accounts(1)
                bench.endpoint(profiled, fast, "/profile")
                ids, _ = bench.emit_round_robin([profiled], 200)
                items = bench.bodies_of(ids)
                profiler = cProfile.Profile()
                started = time.perf_counter()
                profiler.enable()
                bench.drain()
                profiler.disable()
                per = (time.perf_counter() - started) / len(ids) * 1000
                profiles["product"] = profile_text(
                    profiler, f"cProfile: webhooks_deliver_due(), WEBHOOK_CONCURRENCY=1, {len(ids)} deliveries, "
                              f"{per:.2f} ms each (with profiler overhead)")
                profiler = cProfile.Profile()
                started = time.perf_counter()
                profiler.enable()
                bench.bare(items, 1)
                profiler.disable()
                per = (time.perf_counter() - started) / len(items) * 1000
                profiles["bare"] = profile_text(
                    profiler, f"cProfile: bare httpx loop, sequential, {len(items)} requests, {per:.2f} ms each "
                              f"(with profiler overhead)")
            finally:
                settings.WEBHOOK_CONCURRENCY = args.concurrency

        results = {
            "benchmark": "webhooks",
            "timestamp": utc_timestamp(),
            "machine": machine(loadavg_start=loadavg_start, loadavg_end=load_average()),
            "commit": git_commit(),
            "config": {"concurrency": args.concurrency, "rounds": args.rounds, "events_single": args.events,
                       "events_per_account_multi": args.multi_events, "multi_accounts": MULTI_ACCOUNTS,
                       "endpoints_per_account": ENDPOINTS_PER_ACCOUNT, "slow_delay_s": args.slow_delay,
                       "database": "postgresql",
                       "receiver": "testkit.https_receiver in a child process (HTTP/1.0 over TLS)"},
            "scenarios": scenarios,
            "slow_effect": slow_effect,
        }
        for text in profiles.values():
            print("\n" + text)
        print(table(results))
        write_results(results, "webhooks", run_started)
        return 0
    except BenchFailed as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 1
    finally:
        for receiver in receivers:
            receiver.stop()
        release_database(BENCH_DB, django_ready, database_created)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
