"""Certificate-ask benchmark: GET /internal/tls/allowed?domain= (Caddy's on-demand TLS `ask`) with
thousands of verified partner webmail hostnames, against the same endpoint asked about a platform
name (answered from settings alone: the baseline). One run, one machine, ratios.

    .venv/bin/python bench/tls_allowed.py [--hostnames 10000] [--seconds 4] [--rounds 3]

1. HTTP: gunicorn (production settings, PostgreSQL in a fresh database, Redis as the cache, as in
   production) serves 16 client threads, each on its own keep-alive connection, then one client
   alone (the service time, without queueing). Three asks in alternating rounds of fixed duration
   after a warm-up: a platform name (baseline: no cache, no database), a verified partner hostname
   (200) and an unknown name (404). Latency p50/p99 and requests/s of each, and their ratios to the
   baseline.
2. In process: `tls_allowed()` per call for the same three names, and the cold path (the served
   names reloaded from PostgreSQL after an invalidation) for the whole set.

Prints a table and writes the figures to bench/results/tls-allowed-<UTC timestamp>.json. Everything
(gunicorn, Redis, the database, temporary files) is cleaned up, also on failure. Exit status 0 when
every request got the expected answer.
"""
import argparse
import http.client
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from send import Gunicorn, free_port, percentile, product_env
from support import (BenchFailed, create_database, database_url, git_commit, load_average, log, machine, manage,
                     release_database, utc_timestamp, write_results,
                     add_rows_argument, row, rows_report)

BENCH_DB = "mailwell_tls_bench"
CLIENTS = 16
WEBMAIL_HOST = "webmail.platform.bench.test"
PARTNER_SUFFIX = "partners.bench.test"


@dataclass(frozen=True)
class Ask:
    name: str
    domain: str
    status: int


class TlsGunicorn(Gunicorn):
    def wait_ready(self, api_key: str = "", timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchFailed(f"gunicorn exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                connection.request("GET", f"/internal/tls/allowed?domain={WEBMAIL_HOST}")
                response = connection.getresponse()
                body = response.read()
                connection.close()
                if response.status == 200:
                    return
                raise BenchFailed(f"the ask for {WEBMAIL_HOST} answered {response.status}: {body[:300]!r}")
            except (ConnectionError, http.client.HTTPException, socket.timeout):
                time.sleep(0.2)
        raise BenchFailed(f"gunicorn did not answer within {timeout} s:\n{self.log_tail()}")


def start_redis(temp: Path) -> tuple[subprocess.Popen, int]:
    binary = shutil.which("redis-server")
    if not binary:
        raise BenchFailed("redis-server is needed (apt-get install redis-server): production's cache")
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


def run_load(port: int, ask: Ask, seconds: float, clients: int = CLIENTS) -> dict:
    barrier = threading.Barrier(clients)
    results: list[dict] = [{} for _ in range(clients)]
    path = f"/internal/tls/allowed?domain={ask.domain}"

    def client(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        latencies, errors, samples = [], 0, []
        barrier.wait()
        started = now = time.perf_counter()
        deadline = started + seconds
        while now < deadline:
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                body = response.read()
                finished = time.perf_counter()
                if response.status == ask.status:
                    latencies.append(finished - now)
                else:
                    errors += 1
                    if len(samples) < 3:
                        samples.append(f"{response.status} {body[:200]!r}")
                if response.will_close:
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            except (OSError, http.client.HTTPException) as error:
                errors += 1
                samples.append(repr(error))
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                finished = time.perf_counter()
            now = finished
        connection.close()
        results[index] = {"latencies": latencies, "errors": errors, "samples": samples[:3], "started": started,
                          "ended": now}

    threads = [threading.Thread(target=client, args=(index,), daemon=True) for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"latencies": [value for r in results for value in r["latencies"]],
            "errors": sum(r["errors"] for r in results),
            "samples": [sample for r in results for sample in r["samples"]][:5],
            "elapsed_s": max(r["ended"] for r in results) - min(r["started"] for r in results)}


def summarise(runs: list[dict]) -> dict:
    latencies = sorted(value for run in runs for value in run["latencies"])
    elapsed = sum(run["elapsed_s"] for run in runs)
    return {"requests": len(latencies), "errors": sum(run["errors"] for run in runs),
            "error_samples": [sample for run in runs for sample in run["samples"]][:5],
            "throughput_rps": len(latencies) / elapsed if elapsed else 0.0,
            "p50_ms": percentile(latencies, 0.50) * 1000, "p90_ms": percentile(latencies, 0.90) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000}


def http_benchmark(port: int, asks: list[Ask], seconds: float, rounds: int, warmup: float,
                   clients: int = CLIENTS) -> dict:
    for ask in asks:
        log(f"warm-up {ask.name} ({warmup:g} s, {clients} clients)")
        run_load(port, ask, warmup, clients)
    runs: dict[str, list[dict]] = {ask.name: [] for ask in asks}
    for round_index in range(rounds):
        order = asks if round_index % 2 == 0 else list(reversed(asks))
        for ask in order:
            run = run_load(port, ask, seconds, clients)
            log(f"round {round_index + 1}/{rounds} {ask.name}, {clients} clients: "
                f"{len(run['latencies']) / run['elapsed_s']:.0f} req/s, {run['errors']} errors")
            runs[ask.name].append(run)
    summary = {ask.name: {"domain": ask.domain, "status": ask.status, **summarise(runs[ask.name])} for ask in asks}
    baseline = summary[asks[0].name]
    for ask in asks[1:]:
        row = summary[ask.name]
        row["ratio_to_baseline"] = {"p50": row["p50_ms"] / baseline["p50_ms"],
                                    "p99": row["p99_ms"] / baseline["p99_ms"],
                                    "throughput": row["throughput_rps"] / baseline["throughput_rps"]}
    return summary


def seed(count: int) -> str:
    """`count` partner accounts in trial or active, each with a verified webmail hostname."""
    from django.utils import timezone

    from mailcore.accounts.models import Account, Plan
    from mailcore.partners.models import HostingPartner
    from webmail.models import WebmailHostname

    plan = Plan.objects.get(code="free")
    accounts = Account.objects.bulk_create([Account(name=f"Bench partner {i}", plan=plan) for i in range(count)],
                                           batch_size=2000)
    partners = HostingPartner.objects.bulk_create(
        [HostingPartner(account=account, status="active") for account in accounts], batch_size=2000)
    now = timezone.now()
    WebmailHostname.objects.bulk_create(
        [WebmailHostname(partner=partner, hostname=f"webmail{i}.{PARTNER_SUFFIX}", verified_at=now,
                         next_check_at=now + timezone.timedelta(days=1)) for i, partner in enumerate(partners)],
        batch_size=2000)
    return f"webmail{count // 2}.{PARTNER_SUFFIX}"


def in_process(asks: list[Ask], calls: int) -> dict:
    from django.core.cache import cache

    from webmail.hostnames import CACHE_KEY, _forget_locally, served_hostnames, tls_allowed

    per_call = {}
    for ask in asks:
        expected = ask.status == 200
        for _ in range(200):
            assert tls_allowed(ask.domain) is expected, ask
        started = time.perf_counter()
        for _ in range(calls):
            tls_allowed(ask.domain)
        per_call[ask.name] = (time.perf_counter() - started) / calls * 1e6
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    stack = {}
    for ask in asks:
        path = f"/internal/tls/allowed?domain={ask.domain}"
        for _ in range(100):
            assert client.get(path).status_code == ask.status, ask
        started = time.perf_counter()
        for _ in range(calls // 10):
            client.get(path)
        stack[ask.name] = (time.perf_counter() - started) / (calls // 10) * 1e6
    cold = []
    for _ in range(15):
        cache.delete(CACHE_KEY)  # as every change does: the generation is replaced ...
        _forget_locally()  # ... and this process forgets its copy
        started = time.perf_counter()
        names = served_hostnames()
        cold.append((time.perf_counter() - started) * 1000)
    baseline = per_call[asks[0].name]
    return {"calls": calls, "per_call_us": per_call,
            "ratio_to_baseline": {name: value / baseline for name, value in per_call.items()},
            "django_stack_us": stack,
            "django_stack_ratio": {name: value / stack[asks[0].name] for name, value in stack.items()},
            "cold_reload_ms": {"median": statistics.median(cold), "max": max(cold), "names": len(names)}}


def table(results: dict) -> str:
    config, rows = results["config"], results["http"]
    lines = ["", f"HTTP: gunicorn {config['workers']} workers x {config['threads']} threads, PostgreSQL, Redis cache, "
                 f"DJANGO_ENV=production, {CLIENTS} keep-alive clients, {config['rounds']} x {config['seconds']:g} s "
                 f"per ask, {config['hostnames']} verified hostnames",
             f"  {'ask':<34}{'answer':>7}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'x p50':>8}{'x p99':>8}{'errors':>8}"]
    for name, row in rows.items():
        ratio = row.get("ratio_to_baseline")
        lines.append(f"  {name:<34}{row['status']:>7}{row['throughput_rps']:>9.0f}{row['p50_ms']:>9.2f}"
                     f"{row['p99_ms']:>9.2f}{(f'{ratio['p50']:.2f}' if ratio else '1'):>8}"
                     f"{(f'{ratio['p99']:.2f}' if ratio else '1'):>8}{row['errors']:>8}")
    lines += ["", "HTTP, one client at a time (service time, no queueing):",
              f"  {'ask':<34}{'answer':>7}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'x p50':>8}{'x p99':>8}{'errors':>8}"]
    for name, row in results["http_one_client"].items():
        ratio = row.get("ratio_to_baseline")
        lines.append(f"  {name:<34}{row['status']:>7}{row['throughput_rps']:>9.0f}{row['p50_ms']:>9.2f}"
                     f"{row['p99_ms']:>9.2f}{(f'{ratio['p50']:.2f}' if ratio else '1'):>8}"
                     f"{(f'{ratio['p99']:.2f}' if ratio else '1'):>8}{row['errors']:>8}")
    local = results["in_process"]
    lines += ["", f"In process: tls_allowed() per call ({local['calls']} calls each)"]
    for name, value in local["per_call_us"].items():
        lines.append(f"  {name:<34}{value:>9.1f} µs   x {local['ratio_to_baseline'][name]:.2f}")
    lines.append(f"In process: the whole Django stack (middleware, view; no HTTP), {local['calls'] // 10} "
                 "requests each")
    for name, value in local["django_stack_us"].items():
        lines.append(f"  {name:<34}{value:>9.1f} µs   x {local['django_stack_ratio'][name]:.2f}")
    cold = local["cold_reload_ms"]
    lines.append(f"  cold: reload of {cold['names']} served names after an invalidation: "
                 f"median {cold['median']:.1f} ms, "
                 f"max {cold['max']:.1f} ms")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hostnames", type=int, default=10_000, help="verified partner hostnames (default 10000)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4, help="seconds per measured round and ask")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds per ask, alternating order")
    parser.add_argument("--warmup", type=float, default=2, help="warm-up seconds per ask")
    parser.add_argument("--quick", action="store_true", help="shorter rounds, for make bench")
    add_rows_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.hostnames, args.seconds, args.rounds, args.warmup = 2_000, 2, 2, 1

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    run_started = time.perf_counter()
    load_at_start = load_average()
    temp = Path(tempfile.mkdtemp(prefix="mailwell-tls-bench-"))
    data_dir = temp / "data"
    data_dir.mkdir()
    server = redis = None
    database_created = django_ready = False
    try:
        redis, redis_port = start_redis(temp)
        env = product_env(data_dir)
        env.update(DATABASE_URL=database_url(BENCH_DB), REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
                   WEBMAIL_HOST=WEBMAIL_HOST,
                   # production refuses the local payment provider; Stripe is configured and never called
                   PAYMENT_PROVIDER="stripe", STRIPE_API_KEY="sk_test_bench", STRIPE_WEBHOOK_SECRET="whsec_bench")
        log(f"creating database {BENCH_DB}; migrating")
        create_database(BENCH_DB)
        database_created = True
        manage(env, "migrate", "--noinput")
        os.environ.update(env)
        import django

        django.setup()
        django_ready = True
        log(f"seeding {args.hostnames} partners with verified webmail hostnames")
        verified = seed(args.hostnames)
        asks = [Ask("platform name (baseline)", WEBMAIL_HOST, 200), Ask("verified partner hostname", verified, 200),
                Ask("unknown name", "nobody.elsewhere.example", 404)]
        server = TlsGunicorn(env, args.workers, args.threads, temp / "gunicorn.log")
        server.wait_ready()
        log(f"gunicorn up on 127.0.0.1:{server.port}: {args.workers} workers x {args.threads} threads")
        http_results = http_benchmark(server.port, asks, args.seconds, args.rounds, args.warmup)
        single = http_benchmark(server.port, asks, args.seconds, args.rounds, 0.5, clients=1)
        server.stop()
        server = None
        local = in_process(asks, 20_000)
        results = {
            "benchmark": "tls-allowed", "timestamp": utc_timestamp(),
            "machine": machine(load_average_at_start=load_at_start, load_average_at_end=load_average()),
            "commit": git_commit(),
            "config": {"workers": args.workers, "threads": args.threads, "clients": CLIENTS, "seconds": args.seconds,
                       "rounds": args.rounds, "warmup_seconds": args.warmup, "hostnames": args.hostnames,
                       "database": "postgresql", "cache": "redis", "django_env": "production"},
            "http": http_results, "http_one_client": single, "in_process": local,
        }
        print(table(results))
        failures = [name for part in (http_results, single) for name, row in part.items() if row["errors"]]
        for name in failures:
            samples = http_results[name]["error_samples"] or single[name]["error_samples"]
            print(f"\n{name}: unexpected answers, e.g. {samples}")
        write_results(results, "tls-allowed", run_started)
        baseline = http_results[asks[0].name]
        rows_report([row(f"TLS ask: {ask.name}, {CLIENTS} clients, against the platform name",
                         http_results[ask.name]["throughput_rps"], baseline["throughput_rps"], "req/s",
                         note="no target in its issue: expect about 1")
                     for ask in asks[1:]], args.rows_file)
        return 1 if failures else 0
    except BenchFailed as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            if sys.exc_info()[0] is not None:
                print(server.log_tail(), file=sys.stderr)
            server.stop()
        release_database(BENCH_DB, django_ready, database_created)
        if redis is not None:
            redis.terminate()
            redis.wait(timeout=10)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
