"""Inbound throughput: messages through our LMTP listener into Dovecot, against the same messages
handed to that Dovecot's LMTP directly.

The product: `manage.py mail_listener` in a child process with production settings (DJANGO_ENV=
production, PostgreSQL in a fresh database, MAIL_STORE=imap), in front of a private Dovecot started
with the test suite's configuration (testkit.dovecot: docker/dovecot/mailwell.conf, reading the
mailboxes from the bench database through its pgsql driver). The baseline: the same messages,
same recipients, same number of concurrent client connections, to Dovecot's LMTP port.

Each client keeps one LMTP connection and sends its share of the messages, several recipients per
transaction (one reply per recipient after DATA, as Postfix reads them). Rounds alternate the
order; after each round every mailbox's INBOX is counted over IMAP (STATUS), or the run fails.
Each round also reports the CPU per message of the listener (all its processes), of Dovecot and of
the PostgreSQL backends serving the bench database: on a 2-core machine the paths are bound by
their total, so that is where the time goes.
"""
import argparse
import io
import os
import pstats
import random
import secrets
import shutil
import signal
import smtplib
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import support
from support import PYTHON, ROOT, BenchFailed, log, production_env
from support import use_env as support_use_env

BENCH_DB = "mailwell_inbound_bench"
DATABASE_URL = support.database_url(BENCH_DB)
STRIP_ENV = ["REDIS_URL", "SMTP_URL", "MAIL_STORE", "DEBUG", "DB_CONN_MAX_AGE", "DJANGO_SETTINGS_MODULE",
             "LOG_LEVEL", "IMAP_HOST", "IMAP_PORT", "DOVECOT_LMTP", "DOVECOT_MASTER_USER",
             "DOVECOT_MASTER_PASSWORD", "LMTP_LISTEN"]
MASTER_USER = "benchmaster"
SENDER = "newsletter@sender.bench.test"
WORDS = ("mail", "invoice", "meeting", "agenda", "project", "weekly", "report", "update", "thanks", "review",
         "draft", "schedule", "budget", "customer", "release", "notes", "lunch", "travel", "question", "answer")
ROW_PATH = "Inbound: LMTP listener into Dovecot vs Dovecot's LMTP directly (msg/s)"


@dataclass(frozen=True)
class Message:
    recipients: tuple[str, ...]
    raw: bytes


# --- the setup ----------------------------------------------------------------------------------


def product_env(data_dir: Path) -> dict[str, str]:
    return production_env(data_dir, DATABASE_URL, STRIP_ENV, MAIL_STORE="imap", DOVECOT_MASTER_USER=MASTER_USER,
                          DOVECOT_MASTER_PASSWORD=secrets.token_urlsafe(24))


def use_env(env: dict[str, str]) -> None:
    """This process gets the listener's settings, so the mailboxes it creates are the listener's."""
    support_use_env(env, STRIP_ENV)


def make_mailboxes(count: int) -> list[str]:
    """One premium account, one verified domain, `count` managed mailboxes, as production makes them."""
    from mailcore.accounts.models import Account, Plan
    from mailcore.domains.services import domain_create, domain_mark_verified
    from mailcore.mailboxes.services import mailbox_create

    account = Account.objects.create(name="Inbound bench", plan=Plan.objects.get(code="premium"))
    domain = domain_mark_verified(domain=domain_create(account=account, name="inbound.bench.test"))
    return [mailbox_create(domain=domain, local_part=f"user{index:03d}", password=f"password {index} bench").address
            for index in range(count)]


def wait_for_lmtp(port: int, process: subprocess.Popen | None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise BenchFailed(f"the listener exited with status {process.returncode}")
        try:
            with smtplib.LMTP("127.0.0.1", port, timeout=5) as client:
                client.ehlo()
                return
        except OSError:
            time.sleep(0.1)
    raise BenchFailed(f"nothing answered LMTP on port {port}")


class Listener:
    """`manage.py mail_listener` as production runs it (optionally under cProfile, then in one process)."""

    def __init__(self, env: dict, log_path: Path, profile_path: Path | None, processes: int | None):
        from testkit.smtp_sink import free_port

        self.port = free_port()
        self.log_path = log_path
        profiler = ["-m", "cProfile", "-o", str(profile_path)] if profile_path else []
        if profile_path:
            processes = 1  # cProfile sees only its own process
        chosen = ["--processes", str(processes)] if processes else []  # else the command's default
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen(
            [PYTHON, *profiler, "manage.py", "mail_listener", "--listen", f"127.0.0.1:{self.port}", *chosen],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    def cpu_seconds(self) -> float:
        """User and system CPU time so far of the listener and its processes (--processes)."""
        return sum(_cpu_seconds(pid) for pid in [self.process.pid, *_children(self.process.pid)])

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], session [3])."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _processes() -> list[tuple[int, list[str]]]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((int(entry.name), _stat(int(entry.name))))
            except (FileNotFoundError, ProcessLookupError):
                continue
    return found


def _cpu(fields: list[str], *, reaped: bool = True) -> float:
    """User and system CPU seconds, with those of children that ended and were waited for."""
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if reaped else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    try:
        return _cpu(_stat(pid))
    except FileNotFoundError:  # ended meanwhile
        return 0.0


def _children(pid: int) -> list[int]:
    return [child for child, fields in _processes() if int(fields[1]) == pid]


def session_cpu_seconds(session: int) -> float:
    """CPU of every process of a session (Dovecot runs in one of its own), ended ones included."""
    return sum(_cpu(fields) for _, fields in _processes() if int(fields[3]) == session)


def database_cpu_seconds(database: str) -> float:
    """CPU of the PostgreSQL backends connected to `database` (its background writers are shared)."""
    total = 0.0
    for pid, fields in _processes():
        try:
            if f" {database} ".encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                total += _cpu(fields, reaped=False)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


# --- the messages -------------------------------------------------------------------------------


def _text(rng: random.Random, size: int) -> str:
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "."
        lines.append(line)
        total += len(line) + 2
    return "\r\n".join(lines)


def make_messages(count: int, addresses: list[str], seed: int, variant: int | None = None) -> list[Message]:
    """Plain text and HTML alternatives of 5-20 KB, 1-3 recipients, a third of them replies. With
    `variant`, the same seed gives the same shapes (recipients, sizes, replies) with other words and
    Message-IDs: two paths measured on the same work without one path's scans warming a cache for
    the other's."""
    rng = random.Random(seed)
    words = rng if variant is None else random.Random(f"{seed}/{variant}")
    messages, ids = [], []
    for index in range(count):
        recipients = tuple(rng.sample(addresses, rng.choices((1, 2, 3), weights=(60, 25, 15))[0]))
        message_id = f"<{uuid.UUID(int=words.getrandbits(128)).hex}@sender.bench.test>"
        reply = f"In-Reply-To: {ids[-1 - rng.randrange(min(len(ids), 20))]}\r\n" if ids and rng.random() < 0.33 else ""
        ids.append(message_id)
        body = _text(words, rng.randint(2500, 10000))
        raw = (
            f"From: Sender {index} <{SENDER}>\r\nTo: {', '.join(recipients)}\r\n"
            f"Subject: {words.choice(WORDS).capitalize()} {words.choice(WORDS)} {index}\r\n"
            f"Date: Wed, 04 Mar 2026 05:06:07 +0000\r\nMessage-ID: {message_id}\r\n{reply}"
            'MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary="b1"\r\n\r\n'
            f"--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
            f"--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body><p>{body}</p></body></html>\r\n"
            "--b1--\r\n"
        ).encode()
        messages.append(Message(recipients, raw))
    return messages


# --- delivering ---------------------------------------------------------------------------------


def transaction(client: smtplib.LMTP, message: Message) -> list[int]:
    """One LMTP transaction; every recipient's reply after DATA (smtplib reads only the first)."""
    client.mail(SENDER)
    for recipient in message.recipients:
        code, text = client.rcpt(recipient)
        if code != 250:
            raise BenchFailed(f"RCPT {recipient}: {code} {text!r}")
    code, _ = client.data(message.raw)
    return [code] + [client.getreply()[0] for _ in message.recipients[1:]]


def deliver_all(port: int, messages: list[Message], clients: int) -> float:
    """Seconds until `clients` connections, each keeping its own, delivered every message."""
    shares = [messages[index::clients] for index in range(clients)]
    connections = []
    for _ in range(clients):
        client = smtplib.LMTP("127.0.0.1", port, timeout=120)
        client.ehlo("bench.test")
        connections.append(client)
    failures: list[str] = []
    start = threading.Barrier(clients + 1)

    def run(client: smtplib.LMTP, share: list[Message]) -> None:
        start.wait()
        try:
            for message in share:
                codes = transaction(client, message)
                if any(code != 250 for code in codes):
                    failures.append(f"DATA replies {codes}")
        except (OSError, smtplib.SMTPException, BenchFailed) as error:
            failures.append(repr(error))

    threads = [threading.Thread(target=run, args=pair) for pair in zip(connections, shares, strict=True)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    for client in connections:
        try:
            client.quit()
        except (OSError, smtplib.SMTPException):
            client.close()
    if failures:
        raise BenchFailed(f"{len(failures)} client failures on port {port}, e.g. {failures[:3]}")
    return seconds


def inbox_counts(dovecot, addresses: list[str]) -> dict[str, int]:
    """INBOX message counts over IMAP (STATUS), through the master user."""
    import imaplib

    counts = {}
    for address in addresses:
        imap = imaplib.IMAP4(dovecot.host, dovecot.imap_port)
        try:
            imap.login(f"{address}*{dovecot.master_user}", dovecot.master_password)
            _, data = imap.status("INBOX", "(MESSAGES)")
            counts[address] = int(data[0].split(b"MESSAGES ")[1].rstrip(b")"))
        finally:
            imap.logout()
    return counts


def check_counts(dovecot, expected: dict[str, int], label: str) -> None:
    found = inbox_counts(dovecot, list(expected))
    wrong = {address: (found[address], want) for address, want in expected.items() if found[address] != want}
    if wrong:
        raise BenchFailed(f"{label}: INBOX counts (found, expected) differ for {len(wrong)} mailboxes: "
                          f"{list(wrong.items())[:3]}")


def received_events() -> int:
    from mailcore.events.models import Event

    return Event.objects.filter(name="email.received").count()


# --- the run ------------------------------------------------------------------------------------


def measure(args, dovecot, dovecot_process, listener: Listener, addresses: list[str]) -> tuple[dict, dict]:
    """msg/s of each path, and CPU ms per message of each process group on each path."""
    expected = dict.fromkeys(addresses, 0)
    ports = {"listener": listener.port, "dovecot": dovecot.lmtp_port}
    meters = {"listener": listener.cpu_seconds, "Dovecot": lambda: session_cpu_seconds(dovecot_process.pid),
              "PostgreSQL": lambda: database_cpu_seconds(BENCH_DB)}
    seconds = {"listener": [], "dovecot": []}
    cpu = {path: dict.fromkeys(meters, 0.0) for path in ports}
    warmup = make_messages(args.warmup, addresses, seed=0)
    for path in ports:
        deliver_all(ports[path], warmup, args.clients)
        for message in warmup:
            for recipient in message.recipients:
                expected[recipient] += 1
    check_counts(dovecot, expected, "warm-up")
    events = received_events()
    for round_index in range(args.rounds):
        order = ("listener", "dovecot") if round_index % 2 == 0 else ("dovecot", "listener")
        for path in order:
            messages = make_messages(args.messages, addresses, seed=1 + round_index * 2 + (path == "dovecot"))
            before = {name: meter() for name, meter in meters.items()}
            took = deliver_all(ports[path], messages, args.clients)
            used = {name: (meter() - before[name]) * 1000 / args.messages for name, meter in meters.items()}
            for message in messages:
                for recipient in message.recipients:
                    expected[recipient] += 1
            check_counts(dovecot, expected, f"round {round_index + 1} {path}")
            if path == "listener":
                events += sum(len(message.recipients) for message in messages)
                if received_events() != events:
                    raise BenchFailed(f"{received_events()} email.received events, expected {events}")
            seconds[path].append(took)
            for name, ms in used.items():
                cpu[path][name] += ms / args.rounds
            log(f"round {round_index + 1} {path:<8}: {args.messages} messages in {took:.2f} s "
                f"({args.messages / took:.1f} msg/s); CPU ms/msg: {_cpu_text(used, path)}")
    return {path: args.messages * len(times) / sum(times) for path, times in seconds.items()}, cpu


def _cpu_text(used: dict[str, float], path: str) -> str:
    return ", ".join(f"{name} {ms:.1f}" for name, ms in used.items() if name != "listener" or path == "listener")


def profile_text(path: Path, lines: int = 35) -> str:
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.sort_stats("cumulative").print_stats(lines)
    stats.sort_stats("tottime").print_stats(20)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=500, help="messages per round and path (500)")
    parser.add_argument("--mailboxes", type=int, default=20, help="mailboxes on the hosted domain (20)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent LMTP connections (4)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per path, alternating order (2)")
    parser.add_argument("--warmup", type=int, default=40, help="warm-up messages per path (40)")
    parser.add_argument("--quick", action="store_true", help="200 messages, 2 rounds")
    parser.add_argument("--processes", type=int, default=None,
                        help="listener processes (default: the command's, one per core up to 4)")
    parser.add_argument("--profile", action="store_true",
                        help="run the listener under cProfile, in one process, and print it")
    support.add_rows_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.messages, args.warmup = 200, 20

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    load_at_start = support.load_average()
    temp = Path(tempfile.mkdtemp(prefix="mailwell-inbound-bench-"))
    (temp / "data").mkdir()
    env = product_env(temp / "data")
    listener = dovecot = dovecot_process = None
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
        from testkit.dovecot import start_dovecot, stop_dovecot

        addresses = make_mailboxes(args.mailboxes)
        dovecot, dovecot_process = start_dovecot(MASTER_USER, master_password=env["DOVECOT_MASTER_PASSWORD"])
        env.update(IMAP_HOST=dovecot.host, IMAP_PORT=str(dovecot.imap_port), IMAP_TLS="false",
                   DOVECOT_LMTP=f"{dovecot.host}:{dovecot.lmtp_port}")
        profile_path = temp / "listener.prof" if args.profile else None
        listener = Listener(env, temp / "listener.log", profile_path, args.processes)
        wait_for_lmtp(listener.port, listener.process)
        wait_for_lmtp(dovecot.lmtp_port, None)
        log(f"Dovecot LMTP on {dovecot.lmtp_port}, listener on {listener.port}; {args.mailboxes} mailboxes, "
            f"{args.clients} clients, {args.messages} messages x {args.rounds} rounds per path")
        rates, cpu = measure(args, dovecot, dovecot_process, listener, addresses)
        listener.stop()
        if profile_path:
            print("\n" + profile_text(profile_path))
        for path in ("listener", "dovecot"):
            log(f"CPU ms/msg through {path}, mean of rounds: {_cpu_text(cpu[path], path)}")
        log(f"load average {load_at_start} at start, {support.load_average()} at end")
        rows = [support.row(ROW_PATH, rates["listener"], rates["dovecot"], "msg/s", at_least=0.5,
                            note=f"{args.clients} clients, {args.messages} msgs x {args.rounds}; listener CPU "
                                 f"{cpu['listener']['listener']:.1f} ms/msg")]
        support.rows_report(rows, args.rows_file)
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
            stop_dovecot(dovecot, dovecot_process)
        support.release_database(BENCH_DB, django_ready, database_created)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
