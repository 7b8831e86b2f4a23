"""Inbound with scanning on (issue 33, point 13): messages through our LMTP listener, which asks
rspamd before storing each one in Dovecot, against the same messages handed to the same rspamd
directly (HTTP /checkv2) and then to that Dovecot's LMTP. The scanner and the store are the floor;
the listener may add little. Also reports rspamd's and clamd's memory.

rspamd runs from docker/rspamd/ as the test suite starts it (protection.local_scanners: a private
redis-server, clamd with a one-signature database written here, two scanning workers as compose
runs), every DNS look-up answered at once by a loopback DNS server (names it does not know are
NXDOMAIN, so RBLs stay quiet, as with no listing). The rest is bench/inbound.py's setup: PostgreSQL
in a fresh database, a private Dovecot, the listener with production settings plus RSPAMD_URL.

The run fails if any message is not stored once per recipient, or if rspamd did not scan every
message the listener took (then the listener does not scan, and the row says so).
"""
import argparse
import secrets
import shutil
import signal
import smtplib
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

import support
from inbound import (SENDER, STRIP_ENV, Listener, check_counts, database_cpu_seconds, make_mailboxes,
                     make_messages, profile_text, session_cpu_seconds, transaction, use_env, wait_for_lmtp)
from support import BenchFailed, log, production_env

BENCH_DB = "mailwell_scanning_bench"
DATABASE_URL = support.database_url(BENCH_DB)
ROW_PATH = ("Inbound with scanning: listener (rspamd, then Dovecot) vs rspamd per recipient then Dovecot's LMTP "
            "directly (msg/s)")
ROW_ONCE = "Inbound with scanning: listener vs rspamd once per message then Dovecot's LMTP (msg/s)"
CLIENT_IP = "198.51.100.20"
RSPAMD_ENV = ["RSPAMD_URL", "RSPAMD_CONTROLLER_URL", "RSPAMD_PASSWORD", "RSPAMD_REDIS_URL", "DNS_NAMESERVERS"]


def product_env(data_dir: Path) -> dict[str, str]:
    return production_env(data_dir, DATABASE_URL, STRIP_ENV + RSPAMD_ENV, MAIL_STORE="imap",
                          DOVECOT_MASTER_USER="benchmaster", DOVECOT_MASTER_PASSWORD=secrets.token_urlsafe(24))


def memory_megabytes(pids: list[int], field: str = "Pss") -> float:
    """Pss: proportional set size of these processes (shared pages split between them); Rss:
    resident pages of each, shared ones counted in each process. In MB."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith(f"{field}:"):
                    total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total / 1024


def group_pids(group: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == group:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def scanned(rspamd) -> int:
    response = httpx.get(f"{rspamd.controller_url}/stat", headers={"Password": rspamd.password}, timeout=10)
    return int(response.json()["scanned"])


def publish_sender(zone) -> None:
    """The sending side as a well-run sender has it: SPF allowing its server, MX, forward-confirmed
    reverse DNS; so the messages score as ordinary mail (no greylisting) on both paths."""
    zone.set("sender.bench.test", "TXT", f"v=spf1 ip4:{CLIENT_IP} -all")
    zone.set("sender.bench.test", "MX", "10 mx.sender.bench.test")
    zone.set("sender.bench.test", "A", CLIENT_IP)
    zone.set("mx.sender.bench.test", "A", CLIENT_IP)
    zone.set(".".join(reversed(CLIENT_IP.split("."))) + ".in-addr.arpa", "PTR", "mx.sender.bench.test")


def smtp_transactions(client: smtplib.SMTP, message, xforward: bool) -> list[int]:
    """The message in as many SMTP transactions as the listener asks, as Postfix does: recipients
    answered 452 ("one recipient per transaction here") go in the next one. The DATA replies."""
    remaining, codes = list(message.recipients), []
    while remaining:
        if xforward:
            code, text = client.docmd("XFORWARD", f"NAME=mx.sender.bench.test ADDR={CLIENT_IP} "
                                                  "HELO=mx.sender.bench.test PROTO=ESMTP")
            if code != 250:
                raise BenchFailed(f"XFORWARD: {code} {text!r}")
        client.mail(SENDER)
        accepted, later = [], []
        for recipient in remaining:
            code, text = client.rcpt(recipient)
            if code == 250:
                accepted.append(recipient)
            elif code == 452 and accepted:
                later.append(recipient)
            else:
                raise BenchFailed(f"RCPT {recipient}: {code} {text!r}")
        code, _ = client.data(message.raw)
        codes.append(code)
        remaining = later
    return codes


def deliver_listener(port: int, messages, clients: int) -> float:
    """As Postfix's before-queue proxy on port 25 hands mail to the listener: SMTP (EHLO), XFORWARD
    with the internet client's facts before each MAIL when the listener offers it."""
    shares = [messages[index::clients] for index in range(clients)]
    failures: list[str] = []
    start = threading.Barrier(clients + 1)

    def run(share) -> None:
        client = smtplib.SMTP("127.0.0.1", port, timeout=120)
        client.ehlo("bench.test")
        xforward = client.has_extn("xforward")
        start.wait()
        try:
            for message in share:
                codes = smtp_transactions(client, message, xforward)
                if any(code != 250 for code in codes):
                    failures.append(f"DATA replies {codes}")
        except (OSError, smtplib.SMTPException, BenchFailed) as error:
            failures.append(repr(error))
        finally:
            try:
                client.quit()
            except (OSError, smtplib.SMTPException):
                client.close()

    threads = [threading.Thread(target=run, args=(share,)) for share in shares]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    if failures:
        raise BenchFailed(f"{len(failures)} failures on the listener path, e.g. {failures[:3]}")
    return time.perf_counter() - began


def deliver_scanned(rspamd, port: int, messages, clients: int, per_recipient: bool = True) -> float:
    """The baseline: each client asks rspamd (its own keep-alive HTTP connection) once for each
    recipient (each mailbox has its own Bayes, so that is the floor of per-mailbox scoring), or once
    for the message; then hands the message to Dovecot's LMTP in one transaction (its own
    connection). Seconds until every message is stored."""
    shares = [messages[index::clients] for index in range(clients)]
    failures: list[str] = []
    start = threading.Barrier(clients + 1)

    def run(share) -> None:
        http = httpx.Client(timeout=60)
        lmtp = smtplib.LMTP("127.0.0.1", port, timeout=120)
        lmtp.ehlo("bench.test")
        start.wait()
        try:
            for message in share:
                for scope in (message.recipients if per_recipient else message.recipients[:1]):
                    headers = [("IP", CLIENT_IP), ("Helo", "mx.sender.bench.test"), ("From", SENDER),
                               ("Deliver-To", scope),
                               *[("Rcpt", recipient) for recipient in
                                 ([scope] if per_recipient else message.recipients)]]
                    answer = http.post(f"{rspamd.url}/checkv2", content=message.raw, headers=headers)
                    if answer.status_code != 200 or answer.json().get("action") not in ("no action", "add header"):
                        failures.append(f"rspamd: {answer.status_code} {answer.text[:200]}")
                codes = transaction(lmtp, message)
                if any(code != 250 for code in codes):
                    failures.append(f"DATA replies {codes}")
        except (OSError, smtplib.SMTPException, httpx.HTTPError, BenchFailed) as error:
            failures.append(repr(error))
        finally:
            http.close()
            try:
                lmtp.quit()
            except (OSError, smtplib.SMTPException):
                lmtp.close()

    threads = [threading.Thread(target=run, args=(share,)) for share in shares]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    if failures:
        raise BenchFailed(f"{len(failures)} failures on the baseline path, e.g. {failures[:3]}")
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=400, help="messages per round and path (400)")
    parser.add_argument("--mailboxes", type=int, default=20, help="mailboxes on the hosted domain (20)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent client connections (4)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per path, alternating order (2)")
    parser.add_argument("--warmup", type=int, default=30, help="warm-up messages per path (30)")
    parser.add_argument("--workers", type=int, default=2, help="rspamd scanning workers (2, as compose runs)")
    parser.add_argument("--quick", action="store_true", help="150 messages, 2 rounds")
    parser.add_argument("--profile", action="store_true",
                        help="run the listener in one process under cProfile and print where it spends time")
    support.add_rows_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.messages, args.warmup = 150, 20

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    load_at_start = support.load_average()
    temp = Path(tempfile.mkdtemp(prefix="mailwell-scanning-bench-"))
    temp.chmod(0o755)
    (temp / "data").mkdir()
    env = product_env(temp / "data")
    listener = dovecot = dovecot_process = rspamd = clamd = redis = dns = None
    database_created = django_ready = False
    try:
        log(f"creating database {BENCH_DB}; migrating")
        support.create_database(BENCH_DB)
        database_created = True
        support.manage(env, "migrate", "--noinput")
        use_env(env)
        import django

        django.setup()
        django_ready = True
        from dnslib.server import DNSLogger, DNSServer

        from protection.local_scanners import (free_port, start_clamd, start_redis, start_rspamd,
                                               write_eicar_database)
        from testkit.dns_server import Zone
        from testkit.dovecot import start_dovecot
        from testkit.rspamd import HS_CACHE_DIR

        dns_port = free_port(__import__("socket").SOCK_DGRAM)
        zone = Zone()
        publish_sender(zone)
        dns = DNSServer(zone, address="127.0.0.1", port=dns_port,
                        logger=DNSLogger("-request,-reply,-truncated,-error,-recv,-send,-data", False))
        dns.start_thread()
        write_eicar_database(temp / "signatures")
        clamd = start_clamd(temp / "clamd", temp / "signatures")
        redis = start_redis(temp / "redis")
        rspamd = start_rspamd(temp / "rspamd", password=secrets.token_urlsafe(16), redis_url=redis.url,
                              dns_nameservers=[f"127.0.0.1:{dns_port}"], clamd=clamd, hs_cache_dir=HS_CACHE_DIR,
                              workers=args.workers, greylist_delay="1s")
        addresses = make_mailboxes(args.mailboxes)
        dovecot, dovecot_process = start_dovecot("benchmaster", master_password=env["DOVECOT_MASTER_PASSWORD"])
        env.update(IMAP_HOST=dovecot.host, IMAP_PORT=str(dovecot.imap_port), IMAP_TLS="false",
                   DOVECOT_LMTP=f"{dovecot.host}:{dovecot.lmtp_port}", DNS_NAMESERVERS=f"127.0.0.1:{dns_port}",
                   RSPAMD_URL=rspamd.url, RSPAMD_CONTROLLER_URL=rspamd.controller_url,
                   RSPAMD_PASSWORD=rspamd.password, RSPAMD_REDIS_URL=redis.url)
        profile_path = temp / "listener.prof" if args.profile else None
        listener = Listener(env, temp / "listener.log", profile_path, None)
        wait_for_lmtp(listener.port, listener.process)
        log(f"rspamd {rspamd.url} ({args.workers} workers, clamd behind it), Dovecot LMTP {dovecot.lmtp_port}, "
            f"listener {listener.port}; {args.clients} clients, {args.messages} messages x {args.rounds} rounds")

        expected = dict.fromkeys(addresses, 0)

        def cpu_now() -> dict[str, float]:
            """CPU seconds so far of each part: where a path's time goes on this machine's cores."""
            return {"rspamd": session_cpu_seconds(rspamd.process.popen.pid), "listener": listener.cpu_seconds(),
                    "dovecot": session_cpu_seconds(dovecot_process.pid), "postgres": database_cpu_seconds(BENCH_DB),
                    "bench": time.process_time()}

        def count(messages) -> None:
            for message in messages:
                for recipient in message.recipients:
                    expected[recipient] += 1

        paths = {
            "listener": lambda messages: deliver_listener(listener.port, messages, args.clients),
            "direct": lambda messages: deliver_scanned(rspamd, dovecot.lmtp_port, messages, args.clients),
            "once": lambda messages: deliver_scanned(rspamd, dovecot.lmtp_port, messages, args.clients,
                                                     per_recipient=False),
        }
        for name, path in paths.items():
            warmup = make_messages(args.warmup, addresses, seed=100 + len(name))
            path(warmup)
            count(warmup)
        check_counts(dovecot, expected, "warm-up")
        seconds = {name: [] for name in paths}
        listener_scans = listener_messages = 0
        for round_index in range(args.rounds):
            order = ("listener", "direct", "once") if round_index % 2 == 0 else ("once", "direct", "listener")
            for name in order:
                # The same recipients and sizes on every path of a round (other words: no cache shared).
                messages = make_messages(args.messages, addresses, seed=1 + round_index,
                                         variant=list(paths).index(name))
                before = scanned(rspamd)
                cpu_before = cpu_now()
                took = paths[name](messages)
                scans = scanned(rspamd) - before
                cpu = {part: (seconds - cpu_before[part]) * 1000 / args.messages for part, seconds in cpu_now().items()}
                count(messages)
                check_counts(dovecot, expected, f"round {round_index + 1} {name}")
                if name == "listener":
                    listener_scans += scans
                    listener_messages += len(messages)
                seconds[name].append(took)
                log(f"round {round_index + 1} {name:<8}: {args.messages} messages in {took:.2f} s "
                    f"({args.messages / took:.1f} msg/s); rspamd scans {scans}; CPU ms/msg: "
                    + ", ".join(f"{part} {ms:.1f}" for part, ms in cpu.items()))
        rates = {name: args.messages * len(times) / sum(times) for name, times in seconds.items()}
        rspamd_pids = group_pids(rspamd.process.popen.pid)
        rspamd_mb, rspamd_rss = memory_megabytes(rspamd_pids), memory_megabytes(rspamd_pids, "Rss")
        clamd_mb = memory_megabytes([clamd.process.popen.pid])
        redis_mb = memory_megabytes([redis.process.popen.pid])
        log(f"memory after the run: rspamd {rspamd_mb:.0f} MB PSS ({rspamd_rss:.0f} MB RSS summed over its "
            f"{len(rspamd_pids)} processes: main, {args.workers} scanning workers, controller, fuzzy storage, "
            f"Hyperscan helper), clamd {clamd_mb:.0f} MB with one signature (about 1,300 MB with the official "
            f"databases, docs/deployment.md), rspamd's redis-server {redis_mb:.0f} MB")
        log(f"load average {load_at_start} at start, {support.load_average()} at end")
        note = (f"{args.clients} clients, {args.messages} msgs x {args.rounds}; memory PSS: rspamd {rspamd_mb:.0f} MB, "
                f"clamd {clamd_mb:.0f} MB (test signature only)")
        row = support.row(ROW_PATH, rates["listener"], rates["direct"], "msg/s", at_least=0.8, note=note)
        note += f"; the listener asked rspamd {listener_scans / max(listener_messages, 1):.2f} times a message"
        row["note"] = note
        if listener_scans < listener_messages:
            row["passed"] = False
            row["note"] = (f"the listener did not scan: rspamd saw {listener_scans} scans for {listener_messages} "
                           f"messages; {note}")
        once = support.row(ROW_ONCE, rates["listener"], rates["once"], "msg/s",
                           note="no target: the floor without per-mailbox Bayes, for comparison")
        support.rows_report([row, once], args.rows_file)
        if profile_path:
            listener.stop()
            print("\n" + profile_text(profile_path))
        return 0
    except BenchFailed as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        if listener is not None:
            print(listener.log_tail(), file=sys.stderr)
        return 1
    finally:
        if listener is not None:
            listener.stop()
        if dovecot_process is not None:
            from testkit.dovecot import stop_dovecot

            stop_dovecot(dovecot, dovecot_process)
        if django_ready:
            from protection.local_scanners import stop

            for process in (rspamd, redis, clamd):
                if process is not None:
                    stop(process.process)
        if dns is not None:
            dns.stop()
        support.release_database(BENCH_DB, django_ready, database_created)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
