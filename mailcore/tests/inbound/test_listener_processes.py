"""Several listener processes on one port (`manage.py mail_listener --processes 2`): sessions are
spread evenly over the processes, and every message is delivered, stored and announced exactly once."""
import os
import signal
import smtplib
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from testkit.factories import make_mailbox
from testkit.mail import events, inbox
from testkit.smtp_sink import free_port

ROOT = Path(__file__).resolve().parents[3]
CLIENTS = 4
MESSAGES_PER_CLIENT = 3

# The listener is another process reading this test's database: the data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def embedded(plans, settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.DATA_DIR = tmp_path


def database_url() -> str:
    """This test's database (pytest-django's test database), for the listener's DATABASE_URL."""
    database = connection.settings_dict
    if database["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{database['NAME']}"
    credentials = database["USER"] + (f":{database['PASSWORD']}" if database["PASSWORD"] else "")
    return f"postgres://{credentials}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database['NAME']}"


def start_listener(tmp_path) -> tuple[int, subprocess.Popen]:
    """The command with two processes on a free port, answering."""
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "DATA_DIR": str(tmp_path), "DATABASE_URL": database_url(),
           "MAIL_STORE": "embedded", "LOG_LEVEL": "WARNING"}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "mail_listener", "--listen", f"127.0.0.1:{port}", "--processes", "2"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    wait_for(lambda: answers(port, process), seconds=30)
    wait_for(lambda: sessions_per_process(process.pid, port) == [0, 0])  # that session has ended
    return port, process


@pytest.fixture
def listener(tmp_path):
    """yields (port, the parent's pid); stops it with SIGTERM, which must end it cleanly."""
    port, process = start_listener(tmp_path)
    try:
        yield port, process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=40)
    assert process.returncode == 0, output


def answers(port: int, process: subprocess.Popen) -> bool:
    assert process.poll() is None, process.stdout.read()
    try:
        with smtplib.LMTP("127.0.0.1", port, timeout=5) as client:
            return client.ehlo()[0] == 250
    except OSError:
        return False


def wait_for(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.05)


def sessions_per_process(parent: int, port: int) -> list[int]:
    """Established connections to `port` held by each listener process, fewest first (read in /proc)."""
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                established.add(f"socket:[{fields[9]}]")
    counts = []
    for child in children(parent):
        descriptors = Path(f"/proc/{child}/fd")
        counts.append(sum(1 for fd in descriptors.iterdir() if os.readlink(fd) in established))
    return sorted(counts)


def children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except FileNotFoundError:
                continue
            if int(stat[1]) == parent:
                found.append(int(entry.name))
    return found


def message(client: int, number: int, to: str) -> bytes:
    return (f"From: Bea <bea@sender.test>\r\nTo: {to}\r\nSubject: Client {client} message {number}\r\n"
            f"Message-ID: <c{client}n{number}@sender.test>\r\n\r\nHello.\r\n").encode()


def test_sessions_are_spread_evenly_and_each_message_is_delivered_once(listener, alice):
    port, parent = listener
    ann = make_mailbox(alice.account, "ann@example.test")
    bob = make_mailbox(alice.account, "bob@example.test")
    clients = [smtplib.LMTP("127.0.0.1", port) for _ in range(CLIENTS)]
    wait_for(lambda: sessions_per_process(parent, port) == [2, 2])
    failures = []

    def send(number: int, client: smtplib.LMTP) -> None:
        try:
            client.ehlo()  # LHLO
            for index in range(MESSAGES_PER_CLIENT):
                client.mail("bea@sender.test")
                codes = [client.rcpt(ann.address)[0], client.rcpt(bob.address)[0]]
                codes += [client.data(message(number, index, f"{ann.address}, {bob.address}"))[0],
                          client.getreply()[0]]  # LMTP: one reply per recipient after DATA
                if codes != [250] * 4:
                    failures.append(codes)
            client.quit()
        except smtplib.SMTPException as error:
            failures.append(error)

    senders = [threading.Thread(target=send, args=pair) for pair in enumerate(clients)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()

    assert failures == []
    sent = sorted(f"<c{client}n{index}@sender.test>"
                  for client in range(CLIENTS) for index in range(MESSAGES_PER_CLIENT))
    for box in (ann, bob):
        stored = sorted(raw.split(b"Message-ID: ")[1].split(b"\r\n")[0].decode() for raw in inbox(box))
        assert stored == sent
    received = sorted((data["mailbox"], data["message_id"]) for data in events("email.received"))
    assert received == sorted((box.address, message_id) for box in (ann, bob) for message_id in sent)


def test_a_session_opened_after_others_closed_goes_to_the_idle_process(listener):
    port, parent = listener
    first, second = (smtplib.LMTP("127.0.0.1", port) for _ in range(2))
    wait_for(lambda: sessions_per_process(parent, port) == [1, 1])
    first.quit()
    wait_for(lambda: sessions_per_process(parent, port) == [0, 1])
    third = smtplib.LMTP("127.0.0.1", port)
    wait_for(lambda: sessions_per_process(parent, port) == [1, 1])
    second.quit()
    third.quit()


def test_when_one_process_ends_the_listener_stops_with_an_error(tmp_path):
    port, process = start_listener(tmp_path)
    first, second = children(process.pid)

    os.kill(first, signal.SIGKILL)
    output, _ = process.communicate(timeout=40)

    assert process.returncode == 1
    assert "a listener process ended; stopped" in output
    wait_for(lambda: not Path(f"/proc/{second}").exists() or "Z" in process_state(second))


def test_when_the_parent_is_killed_its_processes_end_and_free_the_port(tmp_path):
    port, process = start_listener(tmp_path)
    workers = children(process.pid)

    process.kill()
    process.wait(timeout=10)

    wait_for(lambda: all(not Path(f"/proc/{pid}").exists() or "Z" in process_state(pid) for pid in workers))
    with socket.create_server(("127.0.0.1", port)):  # nothing holds the port any more
        pass


def process_state(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0])
    except FileNotFoundError:
        return "gone"
