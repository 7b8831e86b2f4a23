"""Dispatch in batches: one claim for many due rows, one SMTP connection for the batch, its states
and events written together; a relay that drops the connection mid-batch costs only the message it
was carrying (retried on the schedule), claims held by another worker are left alone, abandoned ones
are taken again. The relay is a real SMTP server on loopback (testkit.smtp_sink), which counts the
sessions clients open."""
import asyncio
import os
import signal
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from mailcore.events.models import Event
from mailcore.jobs import WAKE_CHANNEL
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import CLAIM_TIMEOUT, outbound_dispatch_due
from mailcore.sending.inputs import SendRequest
from mailcore.sending.services import mail_send
from mailcore.store.factory import store_for
from mailcore.sweep import job_named, job_pause, job_run
from testkit.factories import make_mailbox
from testkit.smtp_sink import SinkHandler, free_port, smtp_sink
from testkit.worker_process import CELERY_WORKER, EMBEDDED_WORKER, WorkerProcess, wait_until

SENDER = "news@example.test"


@pytest.fixture
def mailbox(alice):
    mailbox = make_mailbox(alice.account, SENDER)
    plan = mailbox.effective_plan
    plan.sends_per_hour = plan.sends_per_day = 100_000
    plan.save()
    return mailbox


def send(user, to: str, **options) -> OutboundMessage:
    return mail_send(account=user.account, user=user, request=SendRequest(
        from_email=SENDER, to=[to], subject=f"Hello {to}", body_text="Hi", **options))


def statuses() -> Counter:
    return Counter(OutboundMessage.objects.values_list("status", flat=True))


@pytest.mark.django_db
def test_a_batch_of_due_messages_goes_out_over_one_connection_with_its_events_and_sent_copies(
        alice, mailbox, relay):
    for n in range(7):
        send(alice, f"reader{n}@remote.test")
    assert outbound_dispatch_due() == 7
    assert relay.greetings == 1
    assert sorted(to for m in relay.messages for to in m.rcpt_tos) == [f"reader{n}@remote.test" for n in range(7)]
    assert all(m.content.startswith(b"DKIM-Signature:") for m in relay.messages)
    assert statuses() == Counter({"sent": 7})
    assert Event.objects.filter(name="email.sent").count() == 7
    copies = store_for(mailbox).list("Sent", per_page=10, reverse=False).messages
    assert [(copy.uid, copy.subject) for copy in copies] == [(n + 1, f"Hello reader{n}@remote.test") for n in range(7)]
    assert outbound_dispatch_due() == 0


@pytest.mark.django_db
def test_a_batch_claims_at_most_its_limit_and_the_next_run_takes_the_rest(alice, mailbox, relay):
    for n in range(5):
        send(alice, f"reader{n}@remote.test")
    assert outbound_dispatch_due(limit=3) == 3
    assert statuses() == Counter({"sent": 3, "queued": 2})
    assert outbound_dispatch_due(limit=3) == 2
    assert statuses() == Counter({"sent": 5}) and len(relay.messages) == 5


@pytest.mark.django_db
def test_a_relay_closing_the_connection_mid_batch_defers_that_message_only_and_it_goes_out_once_later(
        alice, mailbox, relay):
    for n in range(5):
        send(alice, f"reader{n}@remote.test")
    relay.refuse["reader2@remote.test"] = "421 4.3.2 Service shutting down, closing channel"
    assert outbound_dispatch_due() == 5
    deferred = OutboundMessage.objects.get(status="queued")
    assert deferred.payload["to"] == ["reader2@remote.test"] and deferred.attempts == 1
    assert deferred.last_error == "reader2@remote.test: 421 4.3.2 Service shutting down, closing channel"
    assert deferred.due_at > timezone.now() + timedelta(seconds=50)
    assert statuses() == Counter({"sent": 4, "queued": 1})
    assert relay.greetings == 2  # the client closed on the 421; the rest of the batch went on a new connection
    del relay.refuse["reader2@remote.test"]
    with time_machine.travel(timezone.now() + timedelta(minutes=1, seconds=1)):
        assert outbound_dispatch_due() == 1
    deferred.refresh_from_db()
    assert (deferred.status, deferred.attempts) == ("sent", 2)
    assert Counter(to for m in relay.messages for to in m.rcpt_tos) == Counter(
        {f"reader{n}@remote.test": 1 for n in range(5)})
    assert Event.objects.filter(name="email.sent").count() == 5 and not Event.objects.filter(name="email.failed")


@pytest.mark.django_db
def test_a_relay_that_closes_the_connection_between_messages_costs_a_reconnect_not_a_retry(alice, mailbox, relay):
    for n in range(5):
        send(alice, f"reader{n}@remote.test")
    relay.close_after = 2  # as a relay that takes a few messages per connection, then hangs up
    assert outbound_dispatch_due() == 5
    assert statuses() == Counter({"sent": 5})
    assert relay.greetings == 3
    assert Counter(to for m in relay.messages for to in m.rcpt_tos) == Counter(
        {f"reader{n}@remote.test": 1 for n in range(5)})


@pytest.mark.django_db
def test_a_refused_recipient_fails_its_message_while_the_others_of_the_batch_are_sent(alice, mailbox, relay):
    for n in range(3):
        send(alice, f"reader{n}@remote.test")
    relay.refuse["reader1@remote.test"] = "550 5.1.1 No such user"
    assert outbound_dispatch_due() == 3
    failed = OutboundMessage.objects.get(status="failed")
    assert failed.payload["refused"] == [{"recipient": "reader1@remote.test", "reply": "550 5.1.1 No such user"}]
    assert statuses() == Counter({"sent": 2, "failed": 1}) and relay.greetings == 1
    [event] = Event.objects.filter(name="email.failed")
    assert event.data["message_id"] == str(failed.message_id)


@pytest.mark.django_db
def test_a_claim_held_by_another_worker_is_left_alone_and_an_abandoned_one_is_taken_once_more(
        alice, mailbox, relay):
    held, abandoned, due = (send(alice, f"{name}@remote.test") for name in ("held", "abandoned", "due"))
    OutboundMessage.objects.filter(pk=held.pk).update(status="sending", attempts=1,
                                                      claimed_until=timezone.now() + CLAIM_TIMEOUT)
    OutboundMessage.objects.filter(pk=abandoned.pk).update(status="sending", attempts=1,
                                                           claimed_until=timezone.now() - timedelta(seconds=1))
    assert outbound_dispatch_due() == 2
    assert sorted(to for m in relay.messages for to in m.rcpt_tos) == ["abandoned@remote.test", "due@remote.test"]
    assert dict(OutboundMessage.objects.values_list("payload__to__0", "attempts")) == {
        "held@remote.test": 1, "abandoned@remote.test": 2, "due@remote.test": 1}
    assert OutboundMessage.objects.get(pk=held.pk).status == "sending"
    assert outbound_dispatch_due() == 0


@pytest.mark.django_db
def test_a_message_handed_over_by_a_worker_that_stopped_before_recording_it_is_recorded_not_sent_again(
        alice, mailbox, relay):
    message = send(alice, "once@remote.test")
    OutboundMessage.objects.filter(pk=message.pk).update(
        status="sending", attempts=1, claimed_until=timezone.now() - timedelta(seconds=1),
        payload={**message.payload, "handed_over": [["once@remote.test", "relayed", "250 2.0.0 Ok: queued"]]})

    assert outbound_dispatch_due() == 1

    assert relay.messages == []
    message.refresh_from_db()
    assert (message.status, message.payload["accepted"], "handed_over" in message.payload) == ("sent", 1, False)
    assert Event.objects.filter(name="email.sent").count() == 1
    assert [copy.subject for copy in store_for(mailbox).list("Sent", per_page=10).messages] == [
        "Hello once@remote.test"]


@pytest.mark.django_db
def test_the_mail_job_runs_again_at_once_after_a_batch_while_a_job_without_batches_keeps_its_interval(
        alice, mailbox, relay):
    cache.clear()
    for n in range(3):
        send(alice, f"reader{n}@remote.test")
    mail = job_named("dispatch-due-mail")
    assert job_run(mail) == 3
    assert job_run(mail) == 0  # not refused by a lock: the next batch never waits an interval
    purge = job_named("purge-expired-session-tokens")
    assert job_run(purge) == 0
    assert job_run(purge) is None  # once an hour


@pytest.mark.django_db
def test_the_mail_job_sleeps_until_its_next_scheduled_send_when_that_comes_before_the_interval(alice, mailbox):
    mail = job_named("dispatch-due-mail")
    assert job_pause(mail, 2) == 2  # nothing waiting
    with time_machine.travel(timezone.now(), tick=False):
        send(alice, "later@remote.test", scheduled_at=timezone.now() + timedelta(seconds=1.25))
        assert job_pause(mail, 2) == 1.25
        send(alice, "soon@remote.test", scheduled_at=timezone.now() + timedelta(seconds=0.5))
        assert job_pause(mail, 2) == 0.5
    assert job_pause(job_named("purge-expired-session-tokens"), 2) == 2


@pytest.mark.django_db(transaction=True)
def test_the_worker_process_sends_due_messages_in_batches_one_connection_each(plans, alice, mailbox, relay,
                                                                             settings, tmp_path):
    for n in range(120):
        send(alice, f"reader{n:03}@remote.test")
    worker = WorkerProcess(tmp_path / "worker", SMTP_URL=settings.SMTP_URL, WORKER_PROCESSES="1")
    try:
        worker.start()
        wait_until(lambda: statuses() == Counter({"sent": 120}), what="120 sent", workers=[worker])
    finally:
        worker.stop()
    assert relay.greetings == 3  # batches of 50, 50 and 20
    assert Counter(to for m in relay.messages for to in m.rcpt_tos) == Counter(
        {f"reader{n:03}@remote.test": 1 for n in range(120)})
    assert Event.objects.filter(name="email.sent").count() == 120
    assert "Traceback" not in worker.output()


@pytest.mark.django_db
def test_an_unreachable_relay_defers_the_whole_batch_for_its_retry(alice, mailbox, settings):
    port = free_port()
    settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
    for n in range(3):
        send(alice, f"reader{n}@remote.test")
    assert outbound_dispatch_due() == 3
    assert statuses() == Counter({"queued": 3})
    assert set(OutboundMessage.objects.values_list("last_error", "attempts")) == {
        (f"reader{n}@remote.test: 451 4.4.1 Relay 127.0.0.1:{port} unavailable (ConnectionRefusedError)", 1)
        for n in range(3)}


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_committed_send_wakes_the_idle_worker_rather_than_waiting_for_its_interval(
        plans, alice, mailbox, relay, settings, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's; on SQLite the worker polls (tested above)")
    settings.REDIS_URL = ""  # the embedded mode: no Celery to hand the job to
    worker = WorkerProcess(tmp_path / "worker", SMTP_URL=settings.SMTP_URL, SWEEP_INTERVAL_SECONDS="600")
    try:
        worker.start()
        wait_until(listening, what="the worker listening for new work", workers=[worker])
        send(alice, "woken@remote.test")
        wait_until(lambda: statuses() == Counter({"sent": 1}), timeout=60, what="sent long before 600 s",
                   workers=[worker])
    finally:
        worker.stop()
    assert [to for m in relay.messages for to in m.rcpt_tos] == ["woken@remote.test"]


def listening() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE query = %s", [f"LISTEN {WAKE_CHANNEL}"])
        return cursor.fetchone()[0] > 0


def part_processes(worker: WorkerProcess) -> list[int]:
    """The pids of the `worker --part N` processes the worker started."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"--part" in command and parent == worker.process.pid:
            found.append(int(entry.name))
    return found


def group_alive(group: int) -> list[int]:
    """The live (not zombie) processes of a process group: the worker and every part it started."""
    alive = []
    for entry in Path("/proc").iterdir():
        try:
            state, _, group_of = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(group_of) == group and state != "Z":
            alive.append(int(entry.name))
    return alive


@pytest.mark.django_db(transaction=True)
def test_with_two_worker_processes_the_batches_go_out_side_by_side_each_message_once(
        plans, alice, mailbox, relay, settings, tmp_path):
    for n in range(300):
        send(alice, f"reader{n:03}@remote.test")
    worker = WorkerProcess(tmp_path / "worker", SMTP_URL=settings.SMTP_URL, WORKER_PROCESSES="2")
    try:
        worker.start()
        wait_until(lambda: len(part_processes(worker)) == 1, what="the second part's process", workers=[worker])
        wait_until(lambda: statuses() == Counter({"sent": 300}), what="300 sent", workers=[worker])
        os.kill(worker.process.pid, signal.SIGKILL)  # the main worker dies; its part must not live on
        worker.process.wait(timeout=10)
        wait_until(lambda: not group_alive(worker.process.pid), timeout=30, what="the orphaned part to stop")
    finally:
        worker.stop()
    assert Counter(to for m in relay.messages for to in m.rcpt_tos) == Counter(
        {f"reader{n:03}@remote.test": 1 for n in range(300)})
    assert Event.objects.filter(name="email.sent").count() == 300
    assert "Traceback" not in worker.output()
    assert "the main worker is gone" in worker.output()


class HeldAtThird(SinkHandler):
    """A relay that holds the third message's DATA until `gate` opens, then refuses it (451): the
    worker sending it is killed meanwhile, so that message never left."""

    def __init__(self):
        super().__init__()
        self.gate = threading.Event()
        self.held = False

    async def handle_DATA(self, server, session, envelope):
        if len(self.messages) == 2 and not self.held:
            self.held = True
            await asyncio.get_running_loop().run_in_executor(None, self.gate.wait)
            return "451 4.3.0 Try again later"
        return await super().handle_DATA(server, session, envelope)


@pytest.mark.parametrize("command", [EMBEDDED_WORKER, CELERY_WORKER], ids=["embedded", "celery"])
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_batch_leaves_each_handed_over_message_noted_and_none_goes_out_twice(
        plans, alice, mailbox, settings, tmp_path, command):
    """The worker as `make run` starts it, and Celery's worker with beat as production runs them."""
    held = HeldAtThird()
    with smtp_sink(handler=held) as (port, _):
        for n in range(5):
            send(alice, f"reader{n}@remote.test")
        smtp_url = f"smtp://127.0.0.1:{port}"
        worker = WorkerProcess(tmp_path / "worker", command, SMTP_URL=smtp_url, WORKER_PROCESSES="1")
        try:
            worker.start()
            wait_until(lambda: held.held and OutboundMessage.objects.filter(
                payload__has_key="handed_over").count() == 2, what="two messages noted and the third held",
                workers=[worker])
            worker.kill()  # SIGKILL while the third is in the relay's hands
            held.gate.set()
            noted = {message.payload["to"][0]: message.payload["handed_over"]
                     for message in OutboundMessage.objects.filter(payload__has_key="handed_over")}
            assert noted == {f"reader{n}@remote.test": [[f"reader{n}@remote.test", "relayed", "250 2.0.0 Relayed"]]
                             for n in range(2)}
            assert statuses() == Counter({"sending": 5})  # the whole batch was claimed; nothing recorded

            OutboundMessage.objects.update(claimed_until=timezone.now() - timedelta(seconds=1))  # claims expire
            again = WorkerProcess(tmp_path / "again", command, SMTP_URL=smtp_url, WORKER_PROCESSES="1")
            try:
                again.start()
                wait_until(lambda: statuses() == Counter({"sent": 5}), what="all 5 sent", workers=[again])
            finally:
                again.stop()
        finally:
            worker.stop()
    assert Counter(to for m in held.messages for to in m.rcpt_tos) == Counter(
        {f"reader{n}@remote.test": 1 for n in range(5)})
    assert Event.objects.filter(name="email.sent").count() == 5
    assert not OutboundMessage.objects.filter(payload__has_key="handed_over").exists()
