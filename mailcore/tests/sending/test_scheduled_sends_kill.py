"""A burst of 200 scheduled sends falls due at one moment; the worker sending them (`manage.py worker`,
or Celery's worker with beat) is killed with SIGKILL in the middle (the embedded one twice) and
started again: every message reaches the relay exactly once, each is recorded sent with its event
and its one copy in Sent, none before its time.

Each kill comes while the relay holds a message's DATA unanswered (then refuses it, 451, as a relay
that lost the session would), so the kill falls between two hand-overs and not in the one window
the dispatcher cannot close (the relay's 250 received, the note not yet written: mailcore.sending.
dispatch). The relay is a real SMTP server on loopback (testkit.smtp_sink)."""
import asyncio
import threading
from collections import Counter
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from mailcore.events.models import Event
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.inputs import SendRequest
from mailcore.sending.services import mail_send
from mailcore.store.factory import store_for
from testkit.factories import make_mailbox
from testkit.smtp_sink import SinkHandler, smtp_sink
from testkit.worker_process import CELERY_WORKER, EMBEDDED_WORKER, WorkerProcess, wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # the worker process reads what the test committed

SENDER = "news@example.test"
SENDS = 200
HELD_AT = (60, 140)  # the relay holds the message after this many it took: one kill for each


class HeldAt(SinkHandler):
    """A relay that holds the DATA of the message that follows `positions[n]` accepted ones until
    `gates[n]` opens, then refuses it (451): the worker sending it is killed meanwhile."""

    def __init__(self, positions: tuple[int, ...]):
        super().__init__()
        self.positions = positions
        self.gates = [threading.Event() for _ in positions]
        self.held: list[int] = []  # the positions reached so far

    async def handle_DATA(self, server, session, envelope):
        reached = len(self.held)
        if reached < len(self.positions) and len(self.messages) == self.positions[reached]:
            self.held.append(self.positions[reached])
            await asyncio.get_running_loop().run_in_executor(None, self.gates[reached].wait)
            return "451 4.3.0 Try again later"
        return await super().handle_DATA(server, session, envelope)


@pytest.fixture
def mailbox(plans, alice):
    mailbox = make_mailbox(alice.account, SENDER)
    plan = mailbox.effective_plan
    plan.sends_per_hour = plan.sends_per_day = 100_000
    plan.save()
    return mailbox


def statuses() -> Counter:
    return Counter(OutboundMessage.objects.values_list("status", flat=True))


def noted() -> int:
    """Messages the relay took that a killed worker wrote down but had not recorded sent."""
    return OutboundMessage.objects.filter(payload__has_key="handed_over").count()


@pytest.mark.parametrize("command", [EMBEDDED_WORKER, CELERY_WORKER], ids=["embedded", "celery"])
def test_a_worker_killed_in_a_burst_of_scheduled_sends_delivers_each_exactly_once(
        plans, alice, mailbox, tmp_path, command):
    due_at = timezone.now() + timedelta(seconds=3)  # about when the worker has started
    with time_machine.travel(timezone.now(), tick=False):  # each is accepted as in the future, however slow this is
        for n in range(SENDS):
            mail_send(account=alice.account, user=alice, request=SendRequest(
                from_email=SENDER, to=[f"reader{n:03}@remote.test"], subject=f"Launch {n:03}", body_text="Hi",
                scheduled_at=due_at))
    assert statuses() == Counter({"scheduled": SENDS})
    # A Celery worker takes seconds to start: there the first kill shows the same (dispatch is the same code).
    held_at = HELD_AT if command is EMBEDDED_WORKER else HELD_AT[:1]
    relay = HeldAt(held_at)
    workers = []
    with smtp_sink(handler=relay) as (port, _):
        environment = {"SMTP_URL": f"smtp://127.0.0.1:{port}", "WORKER_PROCESSES": "1"}
        try:
            for kill, position in enumerate(held_at):
                worker = WorkerProcess(tmp_path / f"worker{kill}", command, **environment).start()
                workers.append(worker)
                wait_until(lambda: len(relay.held) == kill + 1, what=f"the relay holding message {position + 1}",
                           workers=workers)
                worker.kill()
                relay.gates[kill].set()
                assert len(relay.messages) == position
                # What the relay took is sent and recorded, or written down by the dead worker: nothing lost.
                assert statuses()["sent"] + noted() == position
                assert statuses()["sending"] > 0  # its batch claimed and abandoned
                # The dead worker's claims run out (CLAIM_TIMEOUT) before another takes them.
                OutboundMessage.objects.filter(status="sending").update(
                    claimed_until=timezone.now() - timedelta(seconds=1))
            last = WorkerProcess(tmp_path / "last", command, **environment).start()
            workers.append(last)
            wait_until(lambda: statuses() == Counter({"sent": SENDS}), what=f"all {SENDS} sent", workers=workers)
        finally:
            for worker in workers:
                worker.stop()

    assert Counter(to for m in relay.messages for to in m.rcpt_tos) == Counter(
        {f"reader{n:03}@remote.test": 1 for n in range(SENDS)})
    assert sorted(e.data["message_id"] for e in Event.objects.filter(name="email.sent")) == sorted(
        str(pk) for pk in OutboundMessage.objects.values_list("message_id", flat=True))
    assert noted() == 0
    assert not OutboundMessage.objects.filter(sent_at__lt=due_at).exists()  # none went before its time
    copies = store_for(mailbox).list("Sent", per_page=SENDS + 10).messages
    assert sorted(copy.subject for copy in copies) == [f"Launch {n:03}" for n in range(SENDS)]
    assert "Traceback" not in "".join(worker.output() for worker in workers)
