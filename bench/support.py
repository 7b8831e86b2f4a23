"""What the benchmark scripts share: paths, the PostgreSQL bench database, manage.py, logging and
the results file. Imported as `support` by bench/<name>.py, which Python runs with bench/ first on
sys.path; importing it also puts the project root on sys.path so the scripts can import the apps."""
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


class BenchFailed(Exception):
    pass


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- the database -------------------------------------------------------------------------------


def database_url(name: str) -> str:
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as connection:
        connection.execute(sql)


def pg_version() -> str:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL) as connection:
        return connection.execute("SHOW server_version").fetchone()[0]


def create_database(name: str) -> None:
    """A fresh, empty database (dropping any left over from an earlier run)."""
    drop_database(name)
    pg_admin(f"CREATE DATABASE {name}")


def drop_database(name: str) -> None:
    pg_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def manage(env: dict, *args: str) -> str:
    done = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchFailed(f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout


def seed_demo(env: dict) -> str:
    """`seed_demo --json` into the bench's throwaway database: production refuses demo data, so this one
    command runs as development would, on the same database."""
    return manage({**env, "DJANGO_ENV": "development", "DEBUG": "false"}, "seed_demo", "--json")


# --- results ------------------------------------------------------------------------------------


def utc_timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def git_commit() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def machine(**load_averages) -> dict:
    """CPUs, Python, PostgreSQL and platform, then the given load-average entries (keys as named)."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "postgresql": pg_version(),
            "platform": platform.platform(), **load_averages}


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def write_results(results: dict, name: str, run_started: float) -> Path:
    """Adds run_seconds and writes results to bench/results/<name>-<UTC timestamp>.json."""
    results_dir = ROOT / "bench" / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    results["run_seconds"] = round(time.perf_counter() - run_started, 1)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nfigures written to {path.relative_to(ROOT)}; whole run {results['run_seconds']} s")
    return path


# --- cleaning up --------------------------------------------------------------------------------


def release_database(name: str, django_ready: bool, database_created: bool) -> None:
    """For a script's `finally`: closes this process's Django connections and drops the bench
    database if it was created; a failure to drop is reported, not raised, so cleaning goes on."""
    if django_ready:
        from django.db import connections

        connections.close_all()
    if database_created:
        try:
            drop_database(name)
        except Exception as error:  # noqa: BLE001 - report, keep cleaning
            print(f"could not drop {name}: {error}", file=sys.stderr)


# --- the table `make bench` prints --------------------------------------------------------------
#
# Every script adds rows with row() and hands them to rows_report(): it prints them as a table and,
# with --rows-file (which bench/run.py passes), appends them as JSON lines for the whole-run table.


def row(path: str, ours: float, baseline: float, unit: str, *, at_least: float | None = None,
        at_most: float | None = None, note: str = "") -> dict:
    """One line of the table: `ours` against `baseline` (same unit), ratio ours/baseline, and the
    target on that ratio (at_least for throughputs, at_most for times and counts)."""
    ratio = ours / baseline if baseline else float("inf")
    if at_least is not None:
        target, passed = f">= {at_least:g}", ratio >= at_least
    elif at_most is not None:
        target, passed = f"<= {at_most:g}", ratio <= at_most
    else:
        target, passed = "", None
    return {"path": path, "ours": ours, "baseline": baseline, "unit": unit, "ratio": round(ratio, 3),
            "target": target, "passed": passed, "note": note}


def _figure(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3f}"


def rows_table(rows: list[dict]) -> str:
    head = ("Path", "Ours", "Baseline", "Unit", "Ratio", "Target", "Result")
    lines = [(r["path"], _figure(r["ours"]), _figure(r["baseline"]), r["unit"], f"{r['ratio']:.3g}", r["target"],
              {True: "pass", False: "FAIL", None: "-"}[r["passed"]]) for r in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(head, *lines)]
    out = ["  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip() for line in [head, *lines]]
    out.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(out)


def add_rows_argument(parser) -> None:
    parser.add_argument("--rows-file", type=Path, help="append the table rows as JSON lines (bench/run.py)")


def rows_report(rows: list[dict], rows_file: Path | None) -> None:
    print("\n" + rows_table(rows), flush=True)
    if rows_file:
        with rows_file.open("a") as out:
            for one in rows:
                out.write(json.dumps(one) + "\n")


# --- the product's settings in a benchmark ------------------------------------------------------


def production_env(data_dir: Path, database_url: str, strip: list[str], **settings: str) -> dict[str, str]:
    """This process's environment without `strip`, plus production settings on loopback (fresh
    secrets, plain HTTP, Stripe configured and never called: production refuses the local
    provider), plus `settings`."""
    import base64
    import secrets

    env = {name: value for name, value in os.environ.items() if name not in strip}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings", DJANGO_ENV="production", SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="127.0.0.1,localhost", FIELD_ENCRYPTION_KEY=base64.urlsafe_b64encode(os.urandom(32)).decode(),
        PUBLIC_BASE_URL="http://127.0.0.1",
        SECURE_SSL_REDIRECT="false", DATA_DIR=str(data_dir), DATABASE_URL=database_url, LOG_LEVEL="WARNING",
        PAYMENT_PROVIDER="stripe", STRIPE_API_KEY="sk_test_bench", STRIPE_WEBHOOK_SECRET="whsec_bench",
        **settings,
    )
    return env


def use_env(env: dict[str, str], strip: list[str]) -> None:
    """This process gets the product's settings, so what it creates and counts is the product's."""
    os.environ.update(env)
    for name in strip:
        if name not in env:
            os.environ.pop(name, None)
