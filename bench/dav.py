"""CalDAV: a whole-year calendar-query against Radicale 3.9 on the same events. One run, one machine, a ratio.

    .venv/bin/python bench/dav.py [--quick] [--events 500] [--requests 15] [--rounds 3]

Runs on SQLite (the embedded default): no PostgreSQL or Redis needed. A fresh data folder is
migrated, a Pro mailbox is made, and gunicorn serves the product with production settings.
Radicale 3.9 (requirements-test.txt) runs beside it as a plain process with a filesystem store
and an htpasswd user. The same `--events` calendar objects (a tenth of them weekly series, some
without end, some in Europe/Berlin, some all-day; the rest single events spread over 2031) are PUT
to both over HTTP. Then each server answers, in alternating rounds, sequential requests on one
kept-alive connection:

- the calendar-query a client sends to read a year (python-caldav's `search(start, end)`):
  getetag and calendar-data of every VEVENT overlapping 2031 (row with target);
- the same with getetag only (what DAVx5 asks before a multiget; row without target);
- the same year with calendar-data expanded (RFC 4791 9.6.5; row without target; a quarter of the
  requests: Radicale takes seconds for it).

Ours is the median in ms, the baseline Radicale's, the ratio ours / Radicale's. Both answers are
checked to name the same resources. Figures go to bench/results/dav-<UTC time>.json.
"""
import argparse
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import httpx

from send import STRIP_ENV, Gunicorn, free_port
from support import (PYTHON, ROOT, BenchFailed, add_rows_argument, git_commit, load_average, log, manage,
                     production_env, row, rows_report, utc_timestamp, write_results)

ADDRESS = "bench@dav.mailwell.test"
PASSWORD = "bench-mailbox-password"
YEAR_START, YEAR_END = "20310101T000000Z", "20320101T000000Z"
NS = 'xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"'
YEAR_FILTER = (f'<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">'
               f'<c:time-range start="{YEAR_START}" end="{YEAR_END}"/></c:comp-filter></c:comp-filter></c:filter>')
QUERIES = {
    "data": f'<?xml version="1.0"?><c:calendar-query {NS}><d:prop><d:getetag/><c:calendar-data/></d:prop>'
            f"{YEAR_FILTER}</c:calendar-query>",
    "etag": f'<?xml version="1.0"?><c:calendar-query {NS}><d:prop><d:getetag/></d:prop>'
            f"{YEAR_FILTER}</c:calendar-query>",
    "expand": f'<?xml version="1.0"?><c:calendar-query {NS}><d:prop><d:getetag/><c:calendar-data>'
              f'<c:expand start="{YEAR_START}" end="{YEAR_END}"/></c:calendar-data></d:prop>'
              f"{YEAR_FILTER}</c:calendar-query>",
}
BERLIN = ("BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\nBEGIN:DAYLIGHT\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\n"
          "TZNAME:CEST\r\nDTSTART:19700329T020000\r\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\r\nEND:DAYLIGHT\r\n"
          "BEGIN:STANDARD\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nTZNAME:CET\r\nDTSTART:19701025T030000\r\n"
          "RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r\nEND:STANDARD\r\nEND:VTIMEZONE\r\n")


def calendar_object(n: int) -> str:
    """The n-th event of the bench calendar: the same text goes to both servers."""
    day = 1 + (n * 7) % 364
    month_day = time.strftime("%Y%m%d", time.gmtime(time.mktime((2031, 1, day, 12, 0, 0, 0, 0, 0))))
    hour = 8 + n % 10
    lines = [f"UID:bench-{n}@dav.mailwell.test", "DTSTAMP:20301201T000000Z", f"SUMMARY:Bench event {n}",
             f"DESCRIPTION:Event number {n} of the DAV benchmark\\, with a line of text.",
             f"LOCATION:Room {n % 12}"]
    zone = ""
    if n % 10 == 0:  # a weekly series; every other one without end
        lines += [f"DTSTART:{month_day}T{hour:02d}0000Z", f"DTEND:{month_day}T{hour:02d}3000Z",
                  "RRULE:FREQ=WEEKLY" + (";COUNT=12" if n % 20 else "")]
    elif n % 10 == 3:
        lines += [f"DTSTART;VALUE=DATE:{month_day}"]
    elif n % 10 == 5:
        zone = BERLIN
        lines += [f"DTSTART;TZID=Europe/Berlin:{month_day}T{hour:02d}0000",
                  f"DTEND;TZID=Europe/Berlin:{month_day}T{hour + 1:02d}0000"]
    else:
        lines += [f"DTSTART:{month_day}T{hour:02d}0000Z", f"DTEND:{month_day}T{hour + 1:02d}0000Z"]
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Mailwell bench//EN\r\n" + zone + "BEGIN:VEVENT\r\n"
            + "\r\n".join(lines) + "\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")


class Radicale:
    """Radicale 3.9 as its docs run it: filesystem storage, htpasswd (plain) users, its own HTTP server."""

    def __init__(self, folder: Path):
        self.port = free_port()
        (folder / "users").write_text(f"{ADDRESS}:{PASSWORD}\n")
        self._log = open(folder / "radicale.log", "wb")
        self.process = subprocess.Popen(
            [PYTHON, "-m", "radicale", f"--storage-filesystem-folder={folder / 'collections'}",
             "--auth-type=htpasswd", f"--auth-htpasswd-filename={folder / 'users'}",
             "--auth-htpasswd-encryption=plain", f"--server-hosts=127.0.0.1:{self.port}",
             "--logging-level=warning"],
            cwd=folder, stdout=self._log, stderr=subprocess.STDOUT)
        self.log_path = folder / "radicale.log"

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchFailed(f"radicale exited:\n{self.log_path.read_text()[-2000:]}")
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/", timeout=2)
                return
            except httpx.TransportError:
                time.sleep(0.2)
        raise BenchFailed("radicale did not answer")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._log.close()


def make_mailbox() -> None:
    """A Pro mailbox for the product, made through its services."""
    from mailcore.accounts.models import Account, Plan
    from testkit.factories import make_mailbox as make

    account = Account.objects.create(name="DAV bench", plan=Plan.objects.get(code="pro"))
    make(account, ADDRESS, password=PASSWORD)


def load(client: httpx.Client, collection: str, events: int) -> None:
    for n in range(events):
        answer = client.put(f"{collection}bench-{n}.ics", content=calendar_object(n),
                            headers={"Content-Type": "text/calendar; charset=utf-8"})
        if answer.status_code not in (201, 204):
            raise BenchFailed(f"PUT {collection}bench-{n}.ics answered {answer.status_code}: {answer.text[:300]}")


def hrefs(body: bytes) -> list[str]:
    root = ET.fromstring(body)
    return sorted(href.text.rsplit("/", 1)[-1] for href in root.iter("{DAV:}href"))


def timed(client: httpx.Client, collection: str, body: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    answer = client.request("REPORT", collection, content=body,
                            headers={"Depth": "1", "Content-Type": "application/xml; charset=utf-8"})
    elapsed = (time.perf_counter() - started) * 1000
    if answer.status_code != 207:
        raise BenchFailed(f"REPORT {collection} answered {answer.status_code}: {answer.text[:300]}")
    return elapsed, answer.content


def measure(servers: dict[str, tuple[httpx.Client, str]], requests: int, rounds: int) -> dict:
    """Medians (ms) per query and server over alternating rounds, after one untimed request each."""
    times: dict[str, dict[str, list[float]]] = {query: {name: [] for name in servers} for query in QUERIES}
    answers: dict[str, dict[str, list[str]]] = {query: {} for query in QUERIES}
    for query, body in QUERIES.items():
        for name, (client, collection) in servers.items():
            answers[query][name] = hrefs(timed(client, collection, body)[1])
        for number in range(rounds):
            order = list(servers) if number % 2 == 0 else list(reversed(servers))
            for name in order:
                client, collection = servers[name]
                repeat = max(2, requests // 4) if query == "expand" else requests  # Radicale takes seconds
                times[query][name] += [timed(client, collection, body)[0] for _ in range(repeat)]
    return {"medians": {query: {name: round(statistics.median(values), 2) for name, values in by_server.items()}
                        for query, by_server in times.items()},
            "counts": {query: {name: len(found) for name, found in by_server.items()}
                       for query, by_server in answers.items()},
            "same_resources": {query: len({tuple(found) for found in by_server.values()}) == 1
                               for query, by_server in answers.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (for make bench)")
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--requests", type=int, default=15, help="sequential requests per query, server and round")
    parser.add_argument("--rounds", type=int, default=3)
    add_rows_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.requests, args.rounds = 8, 2

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    run_started = time.perf_counter()
    load_at_start = load_average()
    temp = Path(tempfile.mkdtemp(prefix="mailwell-dav-bench-"))
    (temp / "data").mkdir()
    (temp / "radicale").mkdir()
    server = radicale = None
    try:
        env = production_env(temp / "data", f"sqlite:///{temp / 'data' / 'db.sqlite3'}", STRIP_ENV,
                             WEB_CONCURRENCY="2")
        log("migrating a fresh SQLite database")
        manage(env, "migrate", "--noinput")
        manage(env, "collectstatic", "--noinput")
        os.environ.update(env)
        import django

        django.setup()
        make_mailbox()
        from django.db import connections

        connections.close_all()
        server = Gunicorn(env, None, None, temp / "gunicorn.log")
        server.wait_ready()
        radicale = Radicale(temp / "radicale")
        radicale.wait_ready()
        ours_url, theirs_url = f"http://127.0.0.1:{server.port}", f"http://127.0.0.1:{radicale.port}"
        ours_collection = f"/dav/calendars/{ADDRESS}/calendar/"
        theirs_collection = f"/{ADDRESS}/bench/"
        with (httpx.Client(base_url=ours_url, auth=(ADDRESS, PASSWORD), timeout=120) as ours,
              httpx.Client(base_url=theirs_url, auth=(ADDRESS, PASSWORD), timeout=120) as theirs):
            made = theirs.request("MKCALENDAR", theirs_collection)
            if made.status_code != 201:
                raise BenchFailed(f"radicale MKCALENDAR answered {made.status_code}: {made.text[:300]}")
            started = time.perf_counter()
            load(ours, ours_collection, args.events)
            log(f"{args.events} events PUT to Mailwell in {time.perf_counter() - started:.1f} s")
            started = time.perf_counter()
            load(theirs, theirs_collection, args.events)
            log(f"{args.events} events PUT to Radicale in {time.perf_counter() - started:.1f} s")
            figures = measure({"mailwell": (ours, ours_collection), "radicale": (theirs, theirs_collection)},
                              args.requests, args.rounds)
        for query, same in figures["same_resources"].items():
            if not same:
                raise BenchFailed(f"the {query} query found different resources: {figures['counts'][query]}")
        medians = figures["medians"]
        found = figures["counts"]["data"]["mailwell"]
        rows = [
            row(f"CalDAV: whole-year calendar-query with calendar-data, {args.events} events, vs Radicale 3.9",
                medians["data"]["mailwell"], medians["data"]["radicale"], "ms", at_most=1.0,
                note=f"{found} resources in the answer"),
            row(f"CalDAV: whole-year calendar-query, getetag only, {args.events} events, vs Radicale 3.9",
                medians["etag"]["mailwell"], medians["etag"]["radicale"], "ms"),
            row(f"CalDAV: whole-year calendar-query with expand, {args.events} events, vs Radicale 3.9",
                medians["expand"]["mailwell"], medians["expand"]["radicale"], "ms"),
        ]
        results = {"benchmark": "dav", "timestamp": utc_timestamp(), "commit": git_commit(),
                   "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                               "platform": platform.platform(), "load_average_at_start": load_at_start,
                               "load_average_at_end": load_average()},
                   "config": {"events": args.events, "requests": args.requests, "rounds": args.rounds,
                              "database": "sqlite", "django_env": "production", "radicale": "3.9"},
                   "figures": figures, "rows": rows}
        write_results(results, "dav", run_started)
        rows_report(rows, args.rows_file)
        return 0
    except BenchFailed as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 1
    finally:
        for process in (server, radicale):
            if process is not None:
                process.stop()
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
