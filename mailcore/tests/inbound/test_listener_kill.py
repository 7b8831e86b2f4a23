"""The inbound listener (`manage.py mail_listener`, two processes on one port) killed with SIGKILL in
the middle of a burst of LMTP deliveries from several clients, then started again: every recipient
the listener answered 250 has the message in its mailbox (right after the kill, before anything
starts again), and each client, as Postfix would, retries what got no 250 and succeeds.

A message stored whose 250 the kill swallowed is stored again by the retry: LMTP, like SMTP, is
at least once, so only a message that was retried may show up twice. The store is the embedded one
(rows in the test database, which the listener process writes)."""
import smtplib
import threading
import time
from collections import Counter

import pytest

from mailcore.events.models import Event
from mailcore.store.factory import store_for
from testkit.factories import make_mailbox
from testkit.smtp_sink import free_port
from testkit.worker_process import WorkerProcess, wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # the listener process writes where the test reads

CLIENTS = 6
MESSAGES = 30  # per client, each to two mailboxes
RECIPIENTS = ("ann@example.test", "bob@example.test")
KILL_AFTER = CLIENTS * MESSAGES * len(RECIPIENTS) // 3  # recipients answered 250


@pytest.fixture(autouse=True)
def embedded(settings):
    settings.MAIL_STORE = "embedded"


def subject(client: int, number: int) -> str:
    return f"Client {client} message {number}"


def message(client: int, number: int) -> bytes:
    return (f"From: Bea <bea@sender.test>\r\nTo: {', '.join(RECIPIENTS)}\r\nSubject: {subject(client, number)}\r\n"
            f"Message-ID: <c{client}n{number}@sender.test>\r\n\r\nHello.\r\n").encode()


class Postfix:
    """LMTP clients that keep a session each and keep every recipient not answered 250 to try again,
    as a mail server's queue does; `acknowledged` is every (subject, recipient) answered 250."""

    def __init__(self, port: int):
        self.port = port
        self.acknowledged: set[tuple[str, str]] = set()
        self.retried: Counter = Counter()  # (subject, recipient) -> attempts that got no 250
        self.lock = threading.Lock()
        self.deadline = time.monotonic() + 120
        self.threads = [threading.Thread(target=self._client, args=(n,)) for n in range(CLIENTS)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        for thread in self.threads:
            thread.join()

    def _client(self, client: int) -> None:
        session = None
        for number in range(MESSAGES):
            waiting = list(RECIPIENTS)
            while waiting and time.monotonic() < self.deadline:
                try:
                    if session is None:
                        session = smtplib.LMTP("127.0.0.1", self.port, timeout=30)
                        session.ehlo()  # LHLO
                    waiting = self._transaction(session, subject(client, number), message(client, number), waiting)
                except (OSError, smtplib.SMTPException):
                    session = None
                    with self.lock:
                        self.retried.update((subject(client, number), to) for to in waiting)
                    time.sleep(0.05)  # the listener is down: try again in a moment
        if session is not None:
            session.quit()

    def _transaction(self, session: smtplib.LMTP, title: str, raw: bytes, recipients: list[str]) -> list[str]:
        """One LMTP transaction; returns the recipients still to deliver."""
        session.mail("bea@sender.test")
        accepted = [to for to in recipients if session.rcpt(to)[0] == 250]
        if not accepted:
            session.rset()
            return recipients
        replies = [session.data(raw)[0]] + [session.getreply()[0] for _ in accepted[1:]]  # LMTP: one per recipient
        done = {to for to, code in zip(accepted, replies) if code == 250}
        with self.lock:
            self.acknowledged.update((title, to) for to in done)
            self.retried.update((title, to) for to in recipients if to not in done)
        return [to for to in recipients if to not in done]


def stored(mailboxes) -> Counter:
    """(subject, recipient) for every message in the mailboxes' INBOX, as their owners list them."""
    return Counter((summary.subject, mailbox.address) for mailbox in mailboxes
                   for summary in store_for(mailbox).list("INBOX", per_page=1000).messages)


def answers(port: int) -> bool:
    try:
        with smtplib.LMTP("127.0.0.1", port, timeout=5) as client:
            return client.ehlo()[0] == 250
    except OSError:
        return False


def test_a_listener_killed_mid_burst_loses_nothing_it_acknowledged_and_the_senders_retry_the_rest(
        plans, alice, tmp_path):
    mailboxes = [make_mailbox(alice.account, address) for address in RECIPIENTS]
    port = free_port()
    listener = WorkerProcess(tmp_path / "listener", ["manage.py", "mail_listener", "--listen", f"127.0.0.1:{port}",
                                                     "--processes", "2"], MAIL_STORE="embedded")
    postfix = Postfix(port)
    try:
        listener.start()
        wait_until(lambda: answers(port), what="the listener answering", workers=[listener])
        postfix.start()
        wait_until(lambda: len(postfix.acknowledged) >= KILL_AFTER, what=f"{KILL_AFTER} acknowledged",
                   workers=[listener])
        listener.kill()
        with postfix.lock:
            acknowledged_before_kill = set(postfix.acknowledged)
        # Everything answered 250 is there the moment the listener is gone.
        assert acknowledged_before_kill <= set(stored(mailboxes))
        wait_until(lambda: postfix.retried, what="a sender getting no 250")  # some were cut off
        listener.start()
        postfix.join()
    finally:
        listener.stop()

    sent = {(subject(client, number), to) for client in range(CLIENTS) for number in range(MESSAGES)
            for to in RECIPIENTS}
    assert len(acknowledged_before_kill) < len(sent)  # killed mid-burst
    assert postfix.acknowledged == sent  # each sender's retries went through
    copies = stored(mailboxes)
    assert set(copies) == sent
    assert {key for key, count in copies.items() if count > 1} <= set(postfix.retried)  # only a retry doubles
    assert all(count <= 1 + postfix.retried[key] for key, count in copies.items())
    received = Counter((event.data["subject"], event.data["mailbox"]) for event in Event.objects.filter(
        name="email.received"))
    assert set(received) == sent
    assert "Traceback" not in listener.output()
