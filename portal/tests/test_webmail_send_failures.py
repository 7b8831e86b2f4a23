"""A send that fails after the owner left the page comes back to them: the webmail shows a notice,
the message waits in Drafts with the reason, and a bounce (a DSN from the platform's mailer daemon,
with the original attached) is in the Inbox. A relay that refuses for good (5xx) ends it at once; one
that defers (4xx) is retried with backoff and the owner hears only when it gives up. Mail leaves
through the real dispatch worker to a real SMTP server on loopback that refuses; the store is the
embedded one and the real Dovecot."""
import email
import re
from datetime import timedelta
from email import policy
from html import unescape

import pytest
import time_machine
from django.utils import timezone

from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import MAX_ATTEMPTS, outbound_dispatch_due
from mailcore.sending.failures import failed_sends_return
from mailcore.sending.models import SendFailure
from mailcore.store.factory import store_for
from portal.tests.test_webmail_compose import COMPOSE, form, original, owner, sign_in, value_of  # noqa: F401
from testkit.smtp_sink import smtp_sink

INBOX = "/webmail/inbox/"
REFUSAL = "550 5.1.1 <amy@remote.test>: Recipient address rejected: User unknown"
MULTI_LINE_REFUSAL = ("550-5.1.1 The email account that you tried to reach does not exist.\r\n"
                      "550-5.1.1 Please try double-checking the recipient's email address\r\n"
                      "550 5.1.1 for typos or unnecessary spaces.")


@pytest.fixture
def refusing_relay(settings):
    """The outgoing relay: a real SMTP server that refuses amy@remote.test for good and defers busy@."""
    with smtp_sink(refuse={"amy@remote.test": REFUSAL, "busy@remote.test": "451 4.3.2 Try again later",
                           "gone@remote.test": MULTI_LINE_REFUSAL}) as (
            port, sink):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        yield sink


def parse(raw: bytes):
    return email.message_from_bytes(raw, policy=policy.default)


def inbox_bounces(mailbox) -> list:
    store = store_for(mailbox)
    found = []
    for summary in store.list("INBOX").messages:
        raw = store.fetch("INBOX", summary.uid).raw
        if b"MAILER-DAEMON" in raw.split(b"\r\n\r\n", 1)[0]:
            found.append(parse(raw))
    return found


def banner_of(page: str) -> str:
    found = re.search(r'<ul class="messages__list send-failures".*?</ul>', page, re.DOTALL)
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(0)))).strip() if found else ""


def send_reply(client, owner_mailbox, body: str):
    uid = original(owner_mailbox)
    page = client.get(f"/webmail/compose/reply/INBOX/{uid}/").content.decode()
    response = client.post(COMPOSE, form(
        to=value_of(page, "to"), cc="", subject=value_of(page, "subject"), body=body + value_of(page, "body"),
        in_reply_to=value_of(page, "in_reply_to"), references=value_of(page, "references")))
    assert response.status_code == 302
    return int(response["Location"].rstrip("/").rsplit("/", 1)[1])


def test_a_reply_the_relay_refuses_comes_back_as_a_notice_a_draft_and_a_bounce(client, owner, refusing_relay):
    signed_in = sign_in(client, owner)
    sent_id = send_reply(signed_in, owner, "Yes, noon works. See you there.")

    assert outbound_dispatch_due() == 1  # the worker: the relay refuses, the send fails for good at once

    message = OutboundMessage.objects.get(pk=sent_id)
    assert message.status == OutboundMessage.Status.FAILED
    assert refusing_relay.messages == []
    inbox = signed_in.get(INBOX).content.decode()
    banner = banner_of(inbox)
    assert banner.startswith(f"Your message to amy@remote.test was not sent: the receiving server refused it: "
                             f"{REFUSAL}")
    assert "Open it in Drafts" in banner

    failure = SendFailure.objects.get(message=message)
    [draft] = store_for(owner).list("Drafts").messages
    assert failure.draft_uid == draft.uid and draft.subject == "Re: Lunch"
    page = signed_in.get(f"/webmail/compose/drafts/{draft.uid}/").content.decode()
    assert value_of(page, "to") == "amy@remote.test"
    assert value_of(page, "body").startswith("Yes, noon works. See you there.\n\nOn Mon, 3 Mar 2025")
    assert value_of(page, "in_reply_to") == "<orig-1@remote.test>"
    assert REFUSAL in unescape(page)  # the reason, beside the text to fix

    [bounce] = inbox_bounces(owner)
    assert bounce["From"].addresses[0].addr_spec == "MAILER-DAEMON@mail.mailwell.test"
    assert bounce["Subject"] == "Undelivered Mail Returned to Sender: Re: Lunch"
    assert bounce.get_content_type() == "multipart/report"
    assert bounce.get_param("report-type") == "delivery-status"
    human, status, returned = bounce.iter_parts()
    assert "amy@remote.test" in human.get_content() and REFUSAL in human.get_content()
    assert "A copy is in your Drafts folder" in human.get_content()
    assert status.get_content_type() == "message/delivery-status"
    status_text = status.as_string()
    assert "Final-Recipient: rfc822; amy@remote.test" in status_text and "Status: 5.1.1" in status_text
    assert "Action: failed" in status_text
    assert returned.get_content_type() == "message/rfc822"
    original_sent = returned.get_content()
    assert original_sent["Subject"] == "Re: Lunch" and original_sent["In-Reply-To"] == "<orig-1@remote.test>"

    status_page = unescape(signed_in.get(f"/webmail/compose/sent/{sent_id}/").content.decode())
    assert "Not sent" in status_page and f"amy@remote.test: {REFUSAL}" in status_page
    assert f'href="/webmail/compose/drafts/{draft.uid}/"' in status_page

    # Fixed and sent again from the draft: the notice goes, the relay takes it, the draft is gone.
    fixed = signed_in.post(COMPOSE, form(to="amy@work.test", subject="Re: Lunch", body="Yes, noon works.",
                                         draft=str(draft.uid), in_reply_to="<orig-1@remote.test>"))
    assert fixed.status_code == 302
    assert outbound_dispatch_due() == 1
    assert [m.rcpt_tos for m in refusing_relay.messages] == [["amy@work.test"]]
    assert banner_of(signed_in.get(INBOX).content.decode()) == ""
    assert store_for(owner).list("Drafts").messages == []
    assert len(inbox_bounces(owner)) == 1


def test_a_returned_send_is_returned_once_however_often_the_worker_runs(client, owner, refusing_relay):
    signed_in = sign_in(client, owner)
    send_reply(signed_in, owner, "Once.")
    outbound_dispatch_due()
    assert failed_sends_return() == 0
    assert outbound_dispatch_due() == 0
    assert len(store_for(owner).list("Drafts").messages) == 1
    assert len(inbox_bounces(owner)) == 1
    assert SendFailure.objects.get().returned_at is not None


def test_dismissing_the_notice_keeps_the_draft_and_another_mailbox_cannot(client, owner, refusing_relay, charlie):
    signed_in = sign_in(client, owner)
    send_reply(signed_in, owner, "Dismiss me.")
    outbound_dispatch_due()
    failure = SendFailure.objects.get()
    assert signed_in.get("/webmail/compose/failures/%d/dismiss/" % failure.pk).status_code == 405
    response = signed_in.post(f"/webmail/compose/failures/{failure.pk}/dismiss/")
    assert response.status_code == 302
    assert banner_of(signed_in.get(INBOX).content.decode()) == ""
    assert len(store_for(owner).list("Drafts").messages) == 1
    failure.refresh_from_db()
    assert failure.dismissed_at is not None


@pytest.mark.django_db
def test_another_mailboxs_notice_is_not_found(client, settings, plans, alice, bob, refusing_relay):
    from testkit.factories import make_mailbox
    settings.MAIL_STORE = "embedded"
    ann = make_mailbox(alice.account, "ann@example.test", password="mailbox-password-1")
    store_for(ann).ensure_folders()
    other = make_mailbox(bob.account, "zed@other.test", password="mailbox-password-1")
    send_reply(sign_in(client, ann), ann, "Mine.")
    outbound_dispatch_due()
    failure = SendFailure.objects.get()
    client.logout()
    intruder = sign_in(client, other)
    assert intruder.post(f"/webmail/compose/failures/{failure.pk}/dismiss/").status_code == 404
    assert banner_of(intruder.get(INBOX).content.decode()) == ""
    failure.refresh_from_db()
    assert failure.dismissed_at is None


@pytest.mark.django_db
def test_a_deferring_server_is_retried_and_the_owner_hears_only_when_it_gives_up(client, settings, plans, alice,
                                                                               refusing_relay):
    from testkit.factories import make_mailbox
    settings.MAIL_STORE = "embedded"
    ann = make_mailbox(alice.account, "ann@example.test", password="mailbox-password-1")
    store_for(ann).ensure_folders()
    signed_in = sign_in(client, ann)
    response = signed_in.post(COMPOSE, form(to="busy@remote.test", subject="Invoice", body="Attached soon."))
    sent_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])

    now = timezone.now()
    for attempt in range(1, MAX_ATTEMPTS):
        with time_machine.travel(now + timedelta(hours=3 * attempt), tick=False):
            assert outbound_dispatch_due() == 1
        message = OutboundMessage.objects.get(pk=sent_id)
        assert message.status == OutboundMessage.Status.QUEUED  # temporary: retried later, nothing said yet
        assert message.due_at > now + timedelta(hours=3 * attempt)
        assert not SendFailure.objects.exists()
        assert banner_of(signed_in.get(INBOX).content.decode()) == ""
    with time_machine.travel(now + timedelta(hours=3 * MAX_ATTEMPTS), tick=False):
        assert outbound_dispatch_due() == 1

    assert OutboundMessage.objects.get(pk=sent_id).status == OutboundMessage.Status.FAILED
    banner = banner_of(signed_in.get(INBOX).content.decode())
    assert banner.startswith(f"Your message to busy@remote.test was not sent: the receiving server kept deferring "
                             f"it, so we gave up after {MAX_ATTEMPTS} tries (its last answer: 451 4.3.2 Try again "
                             "later)")
    [bounce] = inbox_bounces(ann)
    assert "Status: 4.4.7" in bounce.as_string()
    assert len(store_for(ann).list("Drafts").messages) == 1


@pytest.mark.django_db
def test_a_partly_delivered_send_keeps_no_draft_but_bounces_for_the_one_refused(client, settings, plans, alice,
                                                                              refusing_relay):
    from testkit.factories import make_mailbox
    settings.MAIL_STORE = "embedded"
    ann = make_mailbox(alice.account, "ann@example.test", password="mailbox-password-1")
    store_for(ann).ensure_folders()
    signed_in = sign_in(client, ann)
    signed_in.post(COMPOSE, form(to="amy@remote.test, carol@remote.test", subject="Plans", body="Friday?"))
    outbound_dispatch_due()
    assert [m.rcpt_tos for m in refusing_relay.messages] == [["carol@remote.test"]]
    banner = banner_of(signed_in.get(INBOX).content.decode())
    assert banner.startswith("Your message to amy@remote.test did not reach everyone:")
    assert store_for(ann).list("Drafts").messages == []
    [bounce] = inbox_bounces(ann)
    assert "The others received it" in next(bounce.iter_parts()).get_content()


@pytest.mark.django_db
def test_an_integrators_send_is_reported_by_its_event_not_returned_to_the_mailbox(settings, plans, alice,
                                                                                  refusing_relay):
    from mailcore.events.models import Event
    from mailcore.sending.inputs import SendRequest
    from mailcore.sending.services import mail_send
    from testkit.factories import make_mailbox
    settings.MAIL_STORE = "embedded"
    ann = make_mailbox(alice.account, "ann@example.test", password="mailbox-password-1")
    store_for(ann).ensure_folders()
    mail_send(account=alice.account, user=alice, request=SendRequest(
        from_email=ann.address, to=["amy@remote.test"], subject="Receipt", body_text="Thanks."))
    assert outbound_dispatch_due() == 1
    assert Event.objects.filter(name="email.failed").count() == 1
    assert not SendFailure.objects.exists()
    assert inbox_bounces(ann) == [] and store_for(ann).list("Drafts").messages == []


@pytest.mark.django_db
def test_a_full_mailbox_gets_the_notice_at_once_and_the_draft_and_bounce_once_there_is_room(
        client, settings, plans, alice, refusing_relay):
    from mailcore.accounts.models import Plan
    from testkit.factories import make_mailbox
    settings.MAIL_STORE = "embedded"
    ann = make_mailbox(alice.account, "ann@example.test", password="mailbox-password-1")
    store = store_for(ann)
    store.ensure_folders()
    signed_in = sign_in(client, ann)
    signed_in.post(COMPOSE, form(to="amy@remote.test", subject="Tight", body="Room?"))
    ann.plan = Plan.objects.create(code="tiny", name="Tiny", rank=9, sends_per_day=5, sends_per_hour=5,
                                   storage_mb=1, attachment_max_mb=1)
    ann.save()
    big = store.append("INBOX", b"Subject: big\r\n\r\n" + b"x" * (1024 * 1024 - 100))

    outbound_dispatch_due()

    failure = SendFailure.objects.get()
    assert failure.returned_at is None and failure.attempts == 1 and failure.claimed_until > timezone.now()
    assert banner_of(signed_in.get(INBOX).content.decode()).startswith("Your message to amy@remote.test was not sent")
    assert failed_sends_return() == 0  # not before its retry time
    store.delete("INBOX", big)
    with time_machine.travel(timezone.now() + timedelta(minutes=2), tick=False):
        assert failed_sends_return() == 1
    failure.refresh_from_db()
    assert failure.returned_at is not None and failure.draft_uid
    assert len(store.list("Drafts").messages) == 1 and len(inbox_bounces(ann)) == 1


@pytest.mark.django_db
def test_a_worker_killed_between_the_draft_and_the_bounce_repeats_only_the_bounce(client, settings, plans, alice,
                                                                                  refusing_relay):
    from testkit.factories import make_mailbox
    settings.MAIL_STORE = "embedded"
    ann = make_mailbox(alice.account, "ann@example.test", password="mailbox-password-1")
    store = store_for(ann)
    store.ensure_folders()
    sign_in(client, ann).post(COMPOSE, form(to="amy@remote.test", subject="Once", body="Only once."))
    outbound_dispatch_due()
    # As a worker killed after the draft was kept (and marked), before the bounce: its claim lapses.
    [bounce] = store.list("INBOX").messages
    store.delete("INBOX", bounce.uid)
    SendFailure.objects.update(bounced_at=None, returned_at=None, claimed_until=timezone.now() - timedelta(seconds=1))

    assert failed_sends_return() == 1
    assert len(store.list("Drafts").messages) == 1 and len(inbox_bounces(ann)) == 1
    assert failed_sends_return() == 0


@pytest.mark.django_db
def test_a_multi_line_refusal_is_one_diagnostic_code_line_in_the_bounce(client, settings, plans, alice,
                                                                        refusing_relay):
    from testkit.factories import make_mailbox
    settings.MAIL_STORE = "embedded"
    ann = make_mailbox(alice.account, "ann@example.test", password="mailbox-password-1")
    store_for(ann).ensure_folders()
    sign_in(client, ann).post(COMPOSE, form(to="gone@remote.test", subject="Hello", body="Still there?"))
    assert outbound_dispatch_due() == 1

    [bounce] = inbox_bounces(ann)
    _human, status, _returned = bounce.iter_parts()
    [_per_message, per_recipient] = status.get_payload()
    assert per_recipient["Diagnostic-Code"] == (
        "smtp; 550 5.1.1 The email account that you tried to reach does not exist. 5.1.1 Please try "
        "double-checking the recipient's email address 5.1.1 for typos or unnecessary spaces.")
    assert set(per_recipient.keys()) == {"Final-Recipient", "Action", "Status", "Diagnostic-Code"}
    assert per_recipient["Status"] == "5.1.1"


@pytest.mark.django_db
def test_a_worker_killed_between_the_draft_and_its_mark_keeps_one_draft(client, settings, plans, alice,
                                                                         refusing_relay):
    from testkit.factories import make_mailbox
    settings.MAIL_STORE = "embedded"
    ann = make_mailbox(alice.account, "ann@example.test", password="mailbox-password-1")
    store = store_for(ann)
    store.ensure_folders()
    sign_in(client, ann).post(COMPOSE, form(to="amy@remote.test", subject="Once", body="Only once."))
    outbound_dispatch_due()
    [draft] = store.list("Drafts").messages
    # As a worker killed after the draft was appended, before draft_uid was written: its claim lapses.
    [bounce] = store.list("INBOX").messages
    store.delete("INBOX", bounce.uid)
    SendFailure.objects.update(draft_uid=None, bounced_at=None, returned_at=None,
                               claimed_until=timezone.now() - timedelta(seconds=1))

    assert failed_sends_return() == 1
    assert [m.uid for m in store.list("Drafts").messages] == [draft.uid]
    assert SendFailure.objects.get().draft_uid == draft.uid
    assert len(inbox_bounces(ann)) == 1
