"""Send API benchmark: sandbox POST /mail/send against the trivial authenticated endpoint,
GET /subscriptions/me, with the same API key on the same server. One run, one machine, ratios.

    .venv/bin/python bench/send.py [--seconds 5] [--rounds 4] [--quick] [--profile]

gunicorn as production runs it (gunicorn.conf.py: sync workers, 2 x CPUs + 1; production
settings, PostgreSQL in a fresh database) serves 16 client threads, each with its own connection
(stdlib http.client; httpx is not a dependency; sync workers close the connection after each
answer, so each client reconnects, as a proxy in front of them does). The two endpoints are measured in alternating rounds of fixed duration after a
warm-up. No worker runs, so the sandbox rows stay `queued`: this measures the API, not delivery
(bench/dispatch.py measures delivery). --profile adds, in this process, the queries each request
makes and a cProfile of both endpoints through Django's whole stack.

Prints a table and its rows (support.rows_report) and writes the figures to
bench/results/send-<UTC timestamp>.json. Everything (gunicorn, the database, temporary files) is
cleaned up, also on failure. Exit status 0 when every request succeeded.
"""
import argparse
import cProfile
import http.client
import io
import json
import os
import pstats
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from support import (PYTHON, ROOT, BenchFailed, add_rows_argument, create_database, database_url, git_commit,
                     load_average, log, machine, manage, release_database, row, rows_report, utc_timestamp,
                     production_env, seed_demo, write_results)

BENCH_DB = "mailwell_bench"
DATABASE_URL = database_url(BENCH_DB)
CLIENTS = 16
SENDER = "hello@demo.mailwell.test"  # seed_demo's mailbox
# Product settings that would change what is measured; the server gets exactly what we set.
STRIP_ENV = ["REDIS_URL", "SMTP_URL", "MAIL_STORE", "DEBUG", "DB_CONN_MAX_AGE", "API_KEY_USAGE_FLUSH_SECONDS",
             "TRUSTED_PROXY_COUNT", "DATA_UPLOAD_MAX_MEMORY_SIZE", "WEB_CONCURRENCY", "GUNICORN_CMD_ARGS",
             "DJANGO_SETTINGS_MODULE", "LOG_LEVEL"]

PARAGRAPH = ("<p>Hello, this is a benchmark message from Mailwell. It carries a few paragraphs of "
             "ordinary HTML, the size of a short real message.</p>\n")
BODY_HTML = "<h1>Weekly update</h1>\n" + PARAGRAPH * 8 + '<p><a href="https://example.com/more">Read more</a></p>'


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), int(round(fraction * len(sorted_values) + 0.5))))
    return sorted_values[rank - 1]


# --- the server ---------------------------------------------------------------------------------


def product_env(data_dir: Path) -> dict[str, str]:
    return production_env(data_dir, DATABASE_URL, STRIP_ENV)


class Gunicorn:
    def __init__(self, env: dict, workers: int | None, threads: int | None, log_path: Path,
                 worker_class: str | None = None):
        self.port = free_port()
        self.log_path = log_path
        self.command = [
            PYTHON, "-m", "gunicorn", "config.wsgi:application",
            "--bind", f"127.0.0.1:{self.port}",
            "--config", str(ROOT / "gunicorn.conf.py"),
            *(["--workers", str(workers)] if workers else []), *(["--threads", str(threads)] if threads else []),
            *(["--worker-class", worker_class] if worker_class else []),
            "--graceful-timeout", "5", "--log-level", "warning",
        ]
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen(self.command, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def wait_ready(self, api_key: str | None = None, timeout: float = 60) -> None:
        """Until gunicorn answers: with an API key, GET /subscriptions/me must be a 200; without one,
        any answer to the webmail's sign-in page will do."""
        path, headers = ("/subscriptions/me", {"X-API-Key": api_key}) if api_key else ("/webmail/login/", {})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchFailed(f"gunicorn exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                connection.request("GET", path, headers=headers)
                response = connection.getresponse()
                body = response.read()
                connection.close()
                if response.status == 200 or not api_key:
                    return
                raise BenchFailed(f"GET {path} answered {response.status}: {body[:500]!r}")
            except (ConnectionError, http.client.HTTPException, socket.timeout):
                time.sleep(0.2)
        raise BenchFailed(f"gunicorn did not answer within {timeout} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._log.close()


# --- HTTP load ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str
    headers: dict
    body: bytes | None
    expect: bytes | None  # a 200 answer must contain this


def run_load(port: int, endpoint: Endpoint, seconds: float, clients: int = CLIENTS) -> dict:
    """`clients` threads, each with its own connection (kept alive while the server allows), for `seconds`."""
    barrier = threading.Barrier(clients)
    results: list[dict] = [{} for _ in range(clients)]

    def client(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        latencies, errors, samples = [], 0, []
        barrier.wait()
        started = time.perf_counter()
        deadline = started + seconds
        now = started
        while now < deadline:
            try:
                connection.request(endpoint.method, endpoint.path, body=endpoint.body, headers=endpoint.headers)
                response = connection.getresponse()
                body = response.read()
                finished = time.perf_counter()
                if response.status == 200 and (endpoint.expect is None or endpoint.expect in body):
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
                if len(samples) < 3:
                    samples.append(repr(error))
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                finished = time.perf_counter()
            now = finished
        connection.close()
        results[index] = {"latencies": latencies, "errors": errors, "samples": samples,
                          "started": started, "ended": now}

    threads = [threading.Thread(target=client, args=(index,), daemon=True) for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies = sorted(latency for result in results for latency in result["latencies"])
    elapsed = max(r["ended"] for r in results) - min(r["started"] for r in results)
    return {
        "requests": len(latencies),
        "errors": sum(r["errors"] for r in results),
        "error_samples": [sample for r in results for sample in r["samples"]][:5],
        "elapsed_s": elapsed,
        "latencies": latencies,
    }


def summarise(runs: list[dict]) -> dict:
    latencies = sorted(latency for run in runs for latency in run["latencies"])
    elapsed = sum(run["elapsed_s"] for run in runs)
    return {
        "requests": len(latencies),
        "errors": sum(run["errors"] for run in runs),
        "error_samples": [sample for run in runs for sample in run["error_samples"]][:5],
        "seconds": round(elapsed, 3),
        "throughput_rps": len(latencies) / elapsed if elapsed else 0.0,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p90_ms": percentile(latencies, 0.90) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "max_ms": (latencies[-1] if latencies else float("nan")) * 1000,
        "per_round_rps": [round(run["requests"] / run["elapsed_s"], 1) for run in runs],
    }


def http_benchmark(port: int, api_key: str, seconds: float, rounds: int, warmup: float) -> dict:
    send_body = json.dumps({
        "from_email": SENDER, "to": ["someone@example.com"], "subject": "Benchmark",
        "body_html": BODY_HTML, "sandbox": True,
    }).encode()
    endpoints = [
        Endpoint("GET /subscriptions/me", "GET", "/subscriptions/me", {"X-API-Key": api_key}, None, b'"plan":'),
        Endpoint("POST /mail/send (sandbox)", "POST", "/mail/send",
                 {"X-API-Key": api_key, "Content-Type": "application/json"}, send_body, b'"status":"sent"'),
    ]
    for endpoint in endpoints:
        log(f"warm-up {endpoint.name} ({warmup:g} s)")
        run_load(port, endpoint, warmup)
    runs: dict[str, list[dict]] = {endpoint.name: [] for endpoint in endpoints}
    for round_index in range(rounds):
        order = endpoints if round_index % 2 == 0 else list(reversed(endpoints))  # A B, B A, ...
        for endpoint in order:
            run = run_load(port, endpoint, seconds)
            log(f"round {round_index + 1}/{rounds} {endpoint.name}: {run['requests'] / run['elapsed_s']:.1f} req/s, "
                f"{run['errors']} errors")
            runs[endpoint.name].append(run)
    trivial, send = (summarise(runs[endpoint.name]) for endpoint in endpoints)
    return {
        "trivial": {"endpoint": endpoints[0].name, **trivial},
        "send": {"endpoint": endpoints[1].name, "request_bytes": len(send_body), **send},
        "ratio": {
            "throughput_send_over_trivial": send["throughput_rps"] / trivial["throughput_rps"],
            "p50_send_over_trivial": send["p50_ms"] / trivial["p50_ms"],
            "p99_send_over_trivial": send["p99_ms"] / trivial["p99_ms"],
        },
    }


# --- profile (in this process, Django set up against the bench database) ---------------------


def profile_http_in_process(api_key: str, requests: int) -> dict:
    """The two endpoints through Django's whole stack (middleware, DRF) without HTTP or gunicorn:
    the SQL statements of one request (CPU time per request and cProfile)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_X_API_KEY=api_key, HTTP_HOST="127.0.0.1")
    send_body = json.dumps({"from_email": SENDER, "to": ["someone@example.com"], "subject": "Benchmark",
                            "body_html": BODY_HTML, "sandbox": True})
    calls = {
        "GET /subscriptions/me": lambda: client.get("/subscriptions/me"),
        "POST /mail/send (sandbox)": lambda: client.post("/mail/send", send_body, content_type="application/json"),
    }
    texts = {}
    for name, call in calls.items():
        for _ in range(20):
            assert call().status_code == 200
        with CaptureQueriesContext(connection) as queries:
            call()
        captured = queries.captured_queries  # now: the next request's request_started clears the log
        statements = "\n".join(f"  {query['sql'][:110]}" for query in captured)
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in range(requests):
            call()
        plain, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        for _ in range(requests):
            call()
        profiler.disable()
        elapsed = time.perf_counter() - started
        texts[name] = (f"{name}: {len(captured)} SQL statements per request\n{statements}\n"
                       + profile_text(profiler, f"cProfile: {name} in process, {requests} requests, "
                                                f"{elapsed / requests * 1000:.2f} ms each with the profiler "
                                                f"({plain / requests * 1000:.2f} ms without, "
                                                f"{cpu / requests * 1000:.2f} ms of CPU)"))
    return texts


def profile_text(profiler: cProfile.Profile, title: str, lines: int = 25) -> str:
    """The project's own functions (api, mailcore, portal, billing) by cumulative time."""
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(r"/(api|mailcore|portal|billing)/", lines)
    text = out.getvalue()
    return f"{title}\n{text[text.index('   ncalls'):] if '   ncalls' in text else text}".rstrip()


# --- output -------------------------------------------------------------------------------------


def table(results: dict) -> str:
    http_part, config = results["http"], results["config"]
    lines = [
        "",
        f"HTTP: gunicorn {config['gunicorn']}, "
        f"PostgreSQL, DJANGO_ENV=production, {CLIENTS} clients, "
        f"{config['rounds']} x {config['seconds']:g} s per endpoint",
        f"  {'endpoint':<28}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'p99/p50':>9}{'requests':>10}{'errors':>8}",
    ]
    for key in ("trivial", "send"):
        part = http_part[key]
        lines.append(f"  {part['endpoint']:<28}{part['throughput_rps']:>9.1f}{part['p50_ms']:>9.2f}"
                     f"{part['p99_ms']:>9.2f}{part['p99_ms'] / part['p50_ms']:>9.2f}{part['requests']:>10}"
                     f"{part['errors']:>8}")
    ratio = http_part["ratio"]
    lines.append(f"  {'ratio send / trivial':<28}{ratio['throughput_send_over_trivial']:>9.2f}"
                 f"{ratio['p50_send_over_trivial']:>9.2f}{ratio['p99_send_over_trivial']:>9.2f}")
    lines.append(f"  per round, req/s: trivial {http_part['trivial']['per_round_rps']}, "
                 f"send {http_part['send']['per_round_rps']}")
    return "\n".join(lines)


def table_rows(http_part: dict) -> list[dict]:
    trivial, send = http_part["trivial"], http_part["send"]
    return [
        row(f"Send API: POST /mail/send vs GET /subscriptions/me, {CLIENTS} clients (req/s)",
            send["throughput_rps"], trivial["throughput_rps"], "req/s", at_least=0.7),
        row("Send API: p99 / p50 of POST /mail/send (ms)", send["p99_ms"], send["p50_ms"], "ms", at_most=3),
    ]


def gunicorn_shape(args) -> str:
    """What the server ran as: gunicorn.conf.py's settings unless the command line overrode them."""
    workers = args.workers or int(os.environ.get("WEB_CONCURRENCY") or 2 * (os.cpu_count() or 1) + 1)
    worker_class = args.worker_class or "sync"
    threads = f" x {args.threads} threads" if args.threads else ""
    return f"{workers} {worker_class} workers{threads}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, help="gunicorn workers (default: gunicorn.conf.py's)")
    parser.add_argument("--threads", type=int, help="gunicorn threads per worker (with --worker-class gthread)")
    parser.add_argument("--worker-class", help="gunicorn worker class (default: gunicorn.conf.py's, sync)")
    parser.add_argument("--seconds", type=float, default=5, help="seconds per measured round and endpoint")
    parser.add_argument("--rounds", type=int, default=4, help="measured rounds per endpoint, alternating order")
    parser.add_argument("--warmup", type=float, default=3, help="warm-up seconds per endpoint")
    parser.add_argument("--quick", action="store_true", help="shorter run for make bench: 2 rounds of 4 s")
    parser.add_argument("--profile", action="store_true",
                        help="also print queries per request and cProfile of both endpoints")
    add_rows_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds, args.warmup = 4, 2, 2

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    run_started = time.perf_counter()
    load_at_start = load_average()
    if load_at_start[0] > 0.5 * (os.cpu_count() or 1):
        log(f"note: load average {load_at_start[0]} on {os.cpu_count()} CPUs before the run; "
            "other work on the machine will lower the figures (the ratios suffer less)")
    temp = Path(tempfile.mkdtemp(prefix="mailwell-bench-"))
    data_dir = temp / "data"
    data_dir.mkdir()
    env = product_env(data_dir)
    server: Gunicorn | None = None
    database_created = django_ready = False
    try:
        log(f"creating database {BENCH_DB}; migrating; seeding (DATA_DIR {data_dir})")
        create_database(BENCH_DB)
        database_created = True
        manage(env, "migrate", "--noinput")
        seeded = json.loads(seed_demo(env).strip().splitlines()[-1])
        api_key = seeded["accounts"]["premium"]["api_key"]

        server = Gunicorn(env, args.workers, args.threads, temp / "gunicorn.log", args.worker_class)
        server.wait_ready(api_key)
        shape = gunicorn_shape(args)
        log(f"gunicorn up on 127.0.0.1:{server.port}: {shape}")
        http_results = http_benchmark(server.port, api_key, args.seconds, args.rounds, args.warmup)
        server.stop()
        server = None

        if args.profile:
            os.environ.update(env)
            for name in STRIP_ENV:
                if name not in env:
                    os.environ.pop(name, None)
            import django

            django.setup()
            django_ready = True
            for text in profile_http_in_process(api_key, 300).values():
                print("\n" + text)

        results = {
            "benchmark": "send",
            "timestamp": utc_timestamp(),
            "machine": machine(load_average_at_start=load_at_start, load_average_at_end=load_average()),
            "commit": git_commit(),
            "config": {"gunicorn": shape, "clients": CLIENTS,
                       "seconds": args.seconds, "rounds": args.rounds, "warmup_seconds": args.warmup,
                       "database": "postgresql", "django_env": "production"},
            "http": http_results,
        }
        print(table(results))
        failures = [part for part in ("trivial", "send") if results["http"][part]["errors"]]
        for part in failures:
            print(f"\n{results['http'][part]['endpoint']}: {results['http'][part]['errors']} failed requests, e.g. "
                  f"{results['http'][part]['error_samples']}")
        write_results(results, "send", run_started)
        rows_report(table_rows(http_results), args.rows_file)
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
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
