"""Deliverability of campaign mail, end to end through the engine, dispatch and a real SMTP sink (and
our own listener for what comes back): signed one-click unsubscribe headers covered by DKIM, the
footer with the postal address, a signed return path (VERP) whose bounces suppress exactly that
contact and cannot be forged, soft bounces counted, complaints suppressing, and the delivered,
opened and clicked timestamps the stats read."""
import email
import re
import smtplib
from datetime import timedelta
from email import policy

import dkim
import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from campaigns.engine import campaigns_run_due
from campaigns.feedback import SOFT_BOUNCE_LIMIT
from campaigns.models import Enrollment, StepDelivery, Suppression
from campaigns.services import campaign_create, campaign_send, step_add
from contacts.services import address_book_for, contact_create
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.errors import InvalidFields
from mailcore.outbound.feedback import return_path_message
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from mailcore.sending.inputs import SendRequest
from mailcore.sending.services import mail_send
from mailcore.tests.outbound.test_feedback import arf_report, postfix_dsn, recipient_block
from testkit.factories import make_mailbox
from testkit.mail import events, inbox, lmtp_send
from testkit.smtp_sink import inbound_listener

pytestmark = pytest.mark.django_db

POSTAL = "Acme Ltd\n1 Market Street, Springfield"


@pytest.fixture
def news(alice):
    return make_mailbox(alice.account, "news@example.test")


@pytest.fixture
def book(alice):
    book = address_book_for(account=alice.account)
    contact_create(book=book, name="Bob Jones", email="bob@people.test")
    contact_create(book=book, name="Carol King", email="carol@people.test")
    return book


def drip(news, book, *, name="Welcome", steps=2):
    campaign = campaign_create(mailbox=news, book=book, from_email=news.address, name=name,
                               subject="Hello {{first_name}}",
                               body_html='<p>Hi {{name}}, see <a href="https://shop.example.test/new">news</a>.</p>',
                               postal_address=POSTAL)
    for n in range(2, steps + 1):
        step_add(campaign=campaign, delay_hours=24 * (n - 1), subject=f"Step {n}", body_html=f"<p>Step {n}</p>")
    return campaign


def send_first_step(campaign) -> None:
    campaign_send(campaign=campaign)
    assert campaigns_run_due() == campaign.enrollments.count()
    outbound_dispatch_due()


def received_by(relay, address: str):
    [found] = [m for m in relay.messages if address in m.rcpt_tos]
    return found


def delivery_of(email_address: str, position: int = 1) -> StepDelivery:
    return StepDelivery.objects.get(enrollment__email=email_address, step__position=position)


def parts(raw: bytes) -> tuple[str, str]:
    message = email.message_from_bytes(raw, policy=policy.default)
    return tuple(message.get_body((kind,)).get_content().replace("\r\n", "\n") for kind in ("plain", "html"))


# What goes out


def test_a_campaign_send_carries_one_click_unsubscribe_headers_signed_by_dkim_and_a_footer(alice, news, book, relay):
    send_first_step(drip(news, book))

    received = received_by(relay, "bob@people.test")
    message = email.message_from_bytes(received.content, policy=policy.default)
    unsubscribe = message["List-Unsubscribe"]
    assert re.fullmatch(r"<http://127\.0\.0\.1:8000/u/[^>\s]+>", unsubscribe)
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert message["Precedence"] == "bulk"
    assert message["Feedback-ID"].endswith(f":{alice.account.pk}:mailwell")
    signature = message["DKIM-Signature"]
    signed = re.search(r"h=([^;]+)", signature.replace("\r\n", "").replace(" ", "")).group(1).lower().split(":")
    assert {"list-unsubscribe", "list-unsubscribe-post", "from", "subject"} <= set(signed)
    key = dkim_key_for("example.test")
    record = dkim_public_record(key).encode()
    assert dkim.verify(received.content, dnsfunc=lambda name, timeout=5: record)
    tampered = received.content.replace(b"List-Unsubscribe: <http://127.0.0.1:8000/u/",
                                        b"List-Unsubscribe: <http://127.0.0.1:8000/u/x")
    assert not dkim.verify(tampered, dnsfunc=lambda name, timeout=5: record)

    text, html = parts(received.content)
    url = unsubscribe.strip("<>")
    assert "Acme Ltd\n1 Market Street, Springfield" in text and f"Unsubscribe: {url}" in text
    assert "Acme Ltd<br>1 Market Street, Springfield" in html
    assert f'<a data-no-track href="{url}">Unsubscribe</a>' in html  # never a tracking redirect
    assert "/t/c/" in html and "/t/o/" in html  # the shop link is tracked, the plan allows read receipts
    assert html.index("Unsubscribe</a>") < html.index("/t/o/")


def test_the_envelope_sender_is_a_signed_return_path_naming_that_message(news, book, relay):
    send_first_step(drip(news, book))

    received = received_by(relay, "bob@people.test")
    assert re.fullmatch(r"bounces\+\d+-[a-z2-7]{24}@example\.test", received.mail_from)
    assert return_path_message(received.mail_from) == delivery_of("bob@people.test").outbound
    assert return_path_message(received.mail_from.upper()) == delivery_of("bob@people.test").outbound
    number = received.mail_from.split("+")[1].split("-")[0]
    carol = delivery_of("carol@people.test").outbound
    assert return_path_message(received.mail_from.replace(f"+{number}-", f"+{carol.pk}-")) is None
    assert return_path_message(received.mail_from.replace("@example.test", "@other.test")) is None


def test_a_plain_send_is_unchanged_and_no_interface_input_sets_bulk_fields(alice, news, relay):
    request = SendRequest.from_data({"from_email": news.address, "to": ["x@people.test"], "body_text": "hi",
                                     "headers": [["List-Unsubscribe", "<https://evil.test/>"]], "verp": True})
    assert request.headers == () and request.verp is False
    message = mail_send(account=alice.account, user=None, request=request)
    assert "headers" not in message.payload and "verp" not in message.payload
    outbound_dispatch_due()
    [received] = relay.messages
    assert received.mail_from == news.address
    assert b"List-Unsubscribe" not in received.content


@pytest.mark.parametrize("headers", [
    (("X-Mailer", "x"),),
    (("List-Unsubscribe", "<https://a.test/>\r\nBcc: victim@x.test"),),
    (("Precedence", "bulk"), ("Precedence", "list")),
    (("Feedback-ID", "caf\u00e9"),),
])
def test_bulk_headers_outside_the_allowlist_or_not_one_ascii_line_are_refused(alice, news, headers):
    with pytest.raises(InvalidFields) as refused:
        mail_send(account=alice.account, user=None, request=SendRequest(
            from_email=news.address, to=["x@people.test"], body_text="hi", headers=headers))
    assert "headers" in refused.value.message_dict
    assert not OutboundMessage.objects.exists()


# What comes back: delivered, opened, clicked


def test_delivered_opened_and_clicked_are_marked_once(news, book, relay):
    start = timezone.now().replace(microsecond=0)
    with time_machine.travel(start, tick=False):
        send_first_step(drip(news, book))
    bob = delivery_of("bob@people.test")
    assert (bob.delivered_at, bob.opened_at, bob.clicked_at) == (start, None, None)

    _, html = parts(received_by(relay, "bob@people.test").content)
    pixel = re.search(r'src="http://127\.0\.0\.1:8000(/t/o/[^"]+)"', html).group(1)
    click = re.search(r'href="http://127\.0\.0\.1:8000(/t/c/[^"]+)"', html).group(1)
    browser = Client()
    with time_machine.travel(start + timedelta(hours=1), tick=False):
        assert browser.get(click).status_code == 302  # a click with images off: opened too
    with time_machine.travel(start + timedelta(hours=2), tick=False):
        assert browser.get(pixel).status_code == 200
        assert browser.get(click).status_code == 302
    bob.refresh_from_db()
    assert bob.opened_at == start + timedelta(hours=1) and bob.clicked_at == start + timedelta(hours=1)
    carol = delivery_of("carol@people.test")
    assert carol.delivered_at == start and carol.opened_at is None and carol.clicked_at is None


def test_a_recipient_our_relay_refuses_for_good_is_a_hard_bounce(news, book, relay):
    relay.refuse["bob@people.test"] = "550 5.1.1 <bob@people.test>: User unknown"
    campaign = drip(news, book)
    send_first_step(campaign)

    bob = delivery_of("bob@people.test")
    assert bob.bounced_at is not None and bob.delivered_at is None
    assert bob.last_error.startswith("hard bounce 5.1.1")
    assert Suppression.objects.filter(account=news.account, email="bob@people.test",
                                      reason=Suppression.Reason.HARD_BOUNCE, campaign=campaign).exists()
    assert Enrollment.objects.get(email="bob@people.test").status == Enrollment.Status.STOPPED
    assert delivery_of("bob@people.test", 2).status == StepDelivery.Status.SKIPPED
    assert Enrollment.objects.get(email="carol@people.test").status == Enrollment.Status.ACTIVE


# What comes back through the listener: bounces and complaints


@pytest.fixture
def listener():
    with inbound_listener() as port:
        yield port


def later_steps(address: str) -> list[str]:
    return list(StepDelivery.objects.filter(enrollment__email=address, step__position__gt=1)
                .values_list("status", flat=True))


@pytest.mark.django_db(transaction=True)
def test_a_hard_bounce_at_the_return_path_suppresses_that_contact_and_stops_later_steps(
        plans, alice, news, book, relay, listener):
    campaign = drip(news, book)
    send_first_step(campaign)
    sent = received_by(relay, "bob@people.test")

    dsn = postfix_dsn(sent.content, recipient_block("bob@people.test"))
    assert lmtp_send(listener, dsn, [sent.mail_from]) == {}

    bob = delivery_of("bob@people.test")
    assert bob.bounced_at is not None and bob.last_error.startswith("hard bounce 5.1.1")
    assert list(Suppression.objects.values_list("account", "email", "reason")) == [
        (alice.account.pk, "bob@people.test", "hard_bounce")]
    assert [e["recipient"] for e in events("email.bounced")] == ["bob@people.test"]
    assert inbox(news) == []  # reports at the return path are never stored
    with time_machine.travel(timezone.now() + timedelta(hours=25)):
        campaigns_run_due()
    assert later_steps("bob@people.test") == ["skipped"]
    assert later_steps("carol@people.test") == ["sent"]


@pytest.mark.django_db(transaction=True)
def test_a_forged_bounce_changes_nothing(plans, alice, news, book, relay, listener):
    campaign = drip(news, book)
    send_first_step(campaign)
    bob_sent, carol_sent = received_by(relay, "bob@people.test"), received_by(relay, "carol@people.test")
    carol_number = carol_sent.mail_from.split("+")[1].split("-")[0]

    # Bob's signature with Carol's message: refused at RCPT
    forged = re.sub(r"\+\d+-", f"+{carol_number}-", bob_sent.mail_from)
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        lmtp_send(listener, postfix_dsn(carol_sent.content, recipient_block("carol@people.test")), [forged])
    assert refused.value.recipients[forged][0] == 550
    # a made-up report sent to the mailbox, naming Carol's message: an event, but no suppression
    lmtp_send(listener, postfix_dsn(carol_sent.content, recipient_block("carol@people.test")), [news.address])
    # a report at Bob's return path that names Carol: about Bob's message whatever it says
    lmtp_send(listener, postfix_dsn(carol_sent.content, recipient_block("carol@people.test")), [bob_sent.mail_from])

    assert list(Suppression.objects.values_list("email", flat=True)) == ["bob@people.test"]
    assert delivery_of("carol@people.test").bounced_at is None
    assert Enrollment.objects.get(email="carol@people.test").status == Enrollment.Status.ACTIVE


@pytest.mark.django_db(transaction=True)
def test_soft_bounces_suppress_only_at_the_limit(plans, alice, news, book, relay, listener):
    assert SOFT_BOUNCE_LIMIT == 3
    gave_up = recipient_block("bob@people.test", status="4.4.7",
                              diagnostic="smtp; 421 4.4.7 Delivery time expired")
    delayed = recipient_block("bob@people.test", action="delayed", status="4.4.1", diagnostic=None)
    for n in range(SOFT_BOUNCE_LIMIT):
        relay.messages.clear()
        send_first_step(drip(news, book, name=f"Campaign {n}", steps=1))
        sent = received_by(relay, "bob@people.test")
        lmtp_send(listener, postfix_dsn(sent.content, delayed), [sent.mail_from])  # still trying: no count
        lmtp_send(listener, postfix_dsn(sent.content, gave_up), [sent.mail_from])
        lmtp_send(listener, postfix_dsn(sent.content, gave_up), [sent.mail_from])  # the same report twice
        assert Suppression.objects.exists() == (n == SOFT_BOUNCE_LIMIT - 1)
    assert list(Suppression.objects.values_list("email", "reason")) == [("bob@people.test", "soft_bounces")]
    assert StepDelivery.objects.filter(bounced_at__isnull=False).count() == SOFT_BOUNCE_LIMIT
    assert events("email.bounced") == []  # soft failures are not email.bounced


@pytest.mark.django_db(transaction=True)
def test_a_spam_complaint_suppresses_and_marks_the_delivery(plans, alice, news, book, relay, listener):
    send_first_step(drip(news, book))
    sent = received_by(relay, "bob@people.test")

    # a feedback loop's report, sent to the sending mailbox and naming the message by its Message-ID
    assert lmtp_send(listener, arf_report(sent.content, rcpt_to="<carol@people.test>"), [news.address]) == {}

    bob = delivery_of("bob@people.test")
    assert bob.complained_at is not None
    assert list(Suppression.objects.values_list("email", "reason")) == [("bob@people.test", "complaint")]
    assert later_steps("bob@people.test") == ["skipped"]
    assert delivery_of("carol@people.test").complained_at is None
