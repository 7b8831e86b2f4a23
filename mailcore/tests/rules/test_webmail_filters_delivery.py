"""An owner's filters and vacation reply at delivery, on both stores: mail arrives through our
inbound listener over LMTP; with Dovecot (imap) Pigeonhole runs the published Sieve script and
sends replies through `submission_host` (an SMTP sink); with the embedded store the listener
applies the same rows and replies through the outbound relay (another SMTP sink)."""
import smtplib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email import message_from_bytes
from email.policy import default as default_policy

import pytest
import time_machine
from django.utils import timezone

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.inbox.labels import label_create
from mailcore.mailboxes.aliases import alias_create
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.services import mailbox_create
from mailcore.store.base import FLAGGED, SEEN
from mailcore.store.factory import store_for
from mailcore.rules.filters import (
    FilterInput,
    VacationInput,
    mail_filter_create,
    mail_filter_delete,
    mail_filter_update,
    vacation_set,
)
from testkit.smtp_sink import Received, SinkHandler, inbound_listener, smtp_sink


@dataclass
class Setup:
    kind: str
    mailbox: Mailbox
    outbox: SinkHandler  # where replies leave: Dovecot's submission_host or the app's relay
    listener: int
    start: int  # outbox messages before the test

    @property
    def store(self):
        return store_for(self.mailbox)

    def deliver(self, subject: str, *, sender: str = "", to: str = "", envelope_from: str | None = None,
                headers: dict | None = None, message_id: str = "") -> str:
        """Send through our inbound listener over LMTP; returns the Message-ID."""
        sender = sender or f"Bea Sender <{self.bea}>"
        message_id = message_id or f"<{uuid.uuid4().hex}@sender.test>"
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        raw = (f"From: {sender}\r\nTo: {to or self.mailbox.address}\r\nSubject: {subject}\r\n"
               f"Message-ID: {message_id}\r\nDate: Wed, 04 Mar 2026 05:06:07 +0000\r\n{extra}"
               "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello.\r\n").encode()
        with smtplib.LMTP("127.0.0.1", self.listener) as client:
            refused = client.sendmail(self.bea if envelope_from is None else envelope_from,
                                      [self.mailbox.address], raw)
        assert refused == {}
        return message_id

    @property
    def bea(self) -> str:
        return f"bea-{self.mailbox.pk}@sender.test"

    def replies(self) -> list[Received]:
        return [message for message in self.outbox.messages[self.start:] if message.rcpt_tos != [self.mailbox.address]]

    def subjects(self, folder: str = "INBOX") -> list[str]:
        return sorted(summary.subject for summary in self.store.list(folder).messages)


# The listener delivers in other threads (and Dovecot reads through its own connection): every row
# must be committed, so the tests are transactional (the `plans` fixture restores the plans).
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["embedded", "imap"])
def setup(request, settings, plans, tmp_path):
    settings.DATA_DIR = tmp_path
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:12]}.test"))
    mailbox = mailbox_create(domain=domain, local_part="owner", password="owner password 1")
    with smtp_sink() as (port, relay):
        if request.param == "imap":
            dovecot = request.getfixturevalue("imap_settings")
            settings.SMTP_URL = ""  # nothing may leave through the app: replies are Dovecot's
            outbox = dovecot.submitted
        else:
            settings.MAIL_STORE = "embedded"
            settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
            outbox = relay
        store_for(mailbox).ensure_folders()
        with inbound_listener() as listener:
            yield Setup(request.param, mailbox, outbox, listener, len(outbox.messages))


def _filter(setup: Setup, **fields):
    values = {"field": "subject", "match": "contains", "stop": True, "enabled": True, **fields}
    return mail_filter_create(mailbox=setup.mailbox, data=FilterInput(**values))


def _vacation(setup: Setup, **fields):
    values = {"enabled": True, "subject": "Away until Monday", "body": "Hello,\nI am away.\nAnn", "days": 7, **fields}
    return vacation_set(mailbox=setup.mailbox, data=VacationInput(**values))


# filters


def test_a_filter_moves_an_arriving_message_into_its_folder(setup):
    setup.store.create_folder("Receipts")
    _filter(setup, value="receipt", action="move", folder="Receipts")

    setup.deliver("Your RECEIPT for March")
    setup.deliver("Lunch on Friday?")

    assert setup.subjects("Receipts") == ["Your RECEIPT for March"]
    assert setup.subjects("INBOX") == ["Lunch on Friday?"]


def test_filters_mark_read_star_and_label_in_order_until_one_stops(setup):
    label = label_create(account=setup.mailbox.account, name="Team", color="#336699", mailbox=setup.mailbox)
    _filter(setup, field="from", match="is", value=f"boss-{setup.mailbox.pk}@corp.test", action="star", stop=False)
    _filter(setup, field="from", value="corp.test", action="label", label_id=label.pk, stop=False)
    _filter(setup, field="from", value="corp.test", action="mark_read", stop=True)
    _filter(setup, field="from", value="corp.test", action="discard")  # never reached: the one before stops

    setup.deliver("Plan", sender=f"The Boss <boss-{setup.mailbox.pk}@corp.test>")

    [summary] = setup.store.list("INBOX").messages
    flags = setup.store.fetch("INBOX", summary.uid).flags
    assert (summary.subject, SEEN in flags, FLAGGED in flags, label.keyword in flags) == ("Plan", True, True, True)


def test_a_delete_filter_drops_matching_mail_only(setup):
    _filter(setup, field="to", value="newsletter@", action="discard")

    setup.deliver("Weekly deals", to=f"Newsletter <newsletter@{setup.mailbox.domain.name}>, {setup.mailbox.address}")
    setup.deliver("From a friend")

    assert setup.subjects("INBOX") == ["From a friend"]


def test_a_value_with_quotes_and_sieve_commands_matches_literally(setup):
    setup.store.create_folder("Odd")
    _filter(setup, match="is", value='x"; discard; "\\', action="move", folder="Odd")

    setup.deliver('x"; discard; "\\')
    setup.deliver("x")

    assert (setup.subjects("Odd"), setup.subjects("INBOX")) == (['x"; discard; "\\'], ["x"])


def test_an_edited_or_deleted_filter_applies_from_the_next_message(setup):
    setup.store.create_folder("Receipts")
    mail_filter = _filter(setup, value="receipt", action="move", folder="Receipts")
    setup.deliver("receipt one")

    mail_filter_update(mail_filter=mail_filter, data=FilterInput(field="subject", match="contains", value="receipt",
                                                                 action="move", folder="Archive"))
    setup.deliver("receipt two")
    mail_filter_delete(mail_filter=mail_filter)
    setup.deliver("receipt three")

    assert (setup.subjects("Receipts"), setup.subjects("Archive"), setup.subjects("INBOX")) == (
        ["receipt one"], ["receipt two"], ["receipt three"])



def test_a_filter_whose_folder_was_deleted_leaves_the_message_in_the_inbox(setup):
    setup.store.create_folder("Receipts")
    _filter(setup, value="receipt", action="move", folder="Receipts")
    setup.store.delete_folder("Receipts")

    setup.deliver("receipt four")

    assert setup.subjects("INBOX") == ["receipt four"]
    assert "Receipts" not in {folder.name for folder in setup.store.folders()}  # not made again


# vacation


def _parsed(received: Received):
    return message_from_bytes(received.content, policy=default_policy)


def test_a_vacation_reply_answers_once_within_its_days(setup):
    _vacation(setup)

    first_id = setup.deliver("Question about the offer")
    setup.deliver("Another question")

    [reply] = setup.replies()
    message = _parsed(reply)
    assert (reply.mail_from, reply.rcpt_tos) == ("<>", [setup.bea])
    assert (message["Subject"], message["In-Reply-To"], message["Auto-Submitted"]) == (
        "Away until Monday", first_id, "auto-replied (vacation)")
    assert (message["From"], message["To"], message["Precedence"]) == (
        setup.mailbox.address, f"Bea Sender <{setup.bea}>", "bulk")
    assert message.get_content().replace("\r\n", "\n").strip() == "Hello,\nI am away.\nAnn"
    assert setup.subjects("INBOX") == ["Another question", "Question about the offer"]  # both kept


def test_another_sender_gets_their_own_reply_and_an_empty_subject_quotes_theirs(setup):
    _vacation(setup, subject="")
    setup.deliver("First")
    other = f"carl-{setup.mailbox.pk}@other.test"

    setup.deliver("Hi from Carl", sender=f"Carl <{other}>", envelope_from=other)

    assert [(r.rcpt_tos, _parsed(r)["Subject"]) for r in setup.replies()] == [
        ([setup.bea], "Auto: First"), ([other], "Auto: Hi from Carl")]


def test_a_vacation_reply_never_answers_noreply_style_senders(setup):
    _vacation(setup)
    robots = [f"{local}-{setup.mailbox.pk}@shop.test" for local in ("noreply", "no-reply", "donotreply")]

    for robot in robots:
        setup.deliver(f"Order from {robot}", sender=f"Shop <{robot}>", envelope_from=robot)
    setup.deliver("Signed by a robot", sender=f"Shop <noreply-{setup.mailbox.pk}@shop.test>")

    assert setup.replies() == []
    assert len(setup.subjects("INBOX")) == 4


def test_a_vacation_reply_that_is_off_does_not_answer(setup):
    _vacation(setup)
    _vacation(setup, enabled=False)

    setup.deliver("Anyone there?")

    assert setup.replies() == []
    assert setup.subjects("INBOX") == ["Anyone there?"]


def test_a_vacation_reply_answers_only_between_its_dates(setup):
    today = timezone.now().date()
    _vacation(setup, starts_on=today - timedelta(days=10), ends_on=today - timedelta(days=1))
    setup.deliver("After it ended")
    assert setup.replies() == []

    _vacation(setup, starts_on=today, ends_on=today + timedelta(days=3))
    setup.deliver("While away")
    assert [_parsed(reply)["Subject"] for reply in setup.replies()] == ["Away until Monday"]


def test_mail_to_an_alias_is_answered_from_the_alias(setup):
    alias = alias_create(mailbox=setup.mailbox, alias_address=f"sales@{setup.mailbox.domain.name}")
    _vacation(setup)  # published after the alias exists: the script lists it in :addresses

    setup.deliver("Quote please", to=f"Sales <{alias.address}>")

    [reply] = setup.replies()
    assert _parsed(reply)["From"] == alias.address


@pytest.mark.parametrize("case", ["mailing list", "auto-submitted", "bulk", "suppressed", "null sender",
                                  "system sender", "our own address", "not addressed to us"])
def test_mail_that_must_never_be_answered_is_not(setup, case):
    _vacation(setup)
    own = setup.mailbox.address
    options = {
        "mailing list": {"headers": {"List-Id": "<news.lists.test>"}},
        "auto-submitted": {"headers": {"Auto-Submitted": "auto-generated"}},
        "bulk": {"headers": {"Precedence": "bulk"}},
        "suppressed": {"headers": {"X-Auto-Response-Suppress": "DR, OOF"}},
        "null sender": {"envelope_from": ""},
        "system sender": {"envelope_from": f"owner-news-{setup.mailbox.pk}@lists.test"},
        "our own address": {"envelope_from": own, "sender": own},
        "not addressed to us": {"to": "someone-else@sender.test"},
    }[case]

    setup.deliver(f"Case: {case}", **options)

    assert setup.replies() == []
    assert setup.subjects("INBOX") == [f"Case: {case}"]


def test_the_embedded_store_answers_the_same_sender_again_once_the_days_have_passed(settings, plans, tmp_path):
    settings.MAIL_STORE, settings.DATA_DIR = "embedded", tmp_path
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:12]}.test"))
    mailbox = mailbox_create(domain=domain, local_part="owner", password="owner password 1")
    vacation_set(mailbox=mailbox, data=VacationInput(enabled=True, subject="Away", body="Away.", days=2))
    with smtp_sink() as (port, relay), inbound_listener() as listener:
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        setup = Setup("embedded", mailbox, relay, listener, 0)
        with time_machine.travel(datetime(2026, 3, 1, 9, tzinfo=UTC), tick=True):
            setup.deliver("One")
        with time_machine.travel(datetime(2026, 3, 3, 8, tzinfo=UTC), tick=True):
            setup.deliver("Two")  # 47 hours later: within the 2 days, not again
        with time_machine.travel(datetime(2026, 3, 3, 10, tzinfo=UTC), tick=True):
            setup.deliver("Three")

    assert [(reply.rcpt_tos, _parsed(reply)["Subject"]) for reply in relay.messages] == [
        ([setup.bea], "Away"), ([setup.bea], "Away")]

