"""Outbound protection as an account sees it: a send that rspamd scores as likely spam is held
before it leaves our relay (nothing reaches the relay), its account hears at once (email.held, a
notice by mail) and releases it (it leaves as it is) or rejects it (email.failed, its owner gets it
back). Owners' mail (webmail, port 587) is always scored; API sends are scored unless the plan exempts
its integrators. The relay is a real SMTP server on loopback, the scanner the suite's rspamd."""
import smtplib

import pytest
from django.core import mail

from mailcore.accounts.models import Plan
from mailcore.events.models import Event
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from testkit.clients import new_key
from testkit.factories import client_message, make_mailbox
from testkit.rspamd import GTUBE
from testkit.smtp_sink import submission_intake

SENDER = "ann@example.test"


def events(name: str) -> list[dict]:
    return [event.data for event in Event.objects.filter(name=name).order_by("id")]


@pytest.fixture
def mailbox(alice):
    return make_mailbox(alice.account, SENDER)


@pytest.fixture
def sender_api(api, alice, mailbox):
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=["send"]))
    return api


def send(api, body_text: str, subject: str = "Hello"):
    response = api.post("/mail/send", {"from_email": SENDER, "to": ["bob@remote.test"], "subject": subject,
                                       "body_text": body_text}, format="json")
    assert response.status_code in (200, 201, 202), response.content
    return response


@pytest.mark.django_db
def test_a_spam_send_is_held_and_its_account_told(rspamd_settings, relay, sender_api, alice,
                                                  django_capture_on_commit_callbacks):
    send(sender_api, f"Buy now {GTUBE}", subject="Totally legit")

    with django_capture_on_commit_callbacks(execute=True):
        assert outbound_dispatch_due() == 1

    assert relay.messages == []
    message = OutboundMessage.objects.get()
    assert message.status == "held"
    (held,) = events("email.held")
    assert held["held_id"] == message.pk and held["from"] == SENDER and held["origin"] == "api"
    assert held["to"] == ["bob@remote.test"] and held["subject"] == "Totally legit"
    assert held["score"] >= 10.0 and held["threshold"] == 10.0 and held["reasons"][0] == "Gtube pattern"
    (notice,) = mail.outbox
    assert notice.to == [alice.email] and notice.subject == f"A message from {SENDER} was held: it looks like spam"
    assert "Totally legit" in notice.body and f"/mail/held/{message.pk}/release" in notice.body
    assert events("email.sent") == [] and events("email.failed") == []

    listed = sender_api.get("/mail/held").json()
    assert [(item["held_id"], item["status"], item["origin"], item["subject"]) for item in listed] == [
        (message.pk, "held", "api", "Totally legit")]
    assert outbound_dispatch_due() == 0  # held: no worker takes it


@pytest.mark.django_db
def test_a_released_send_leaves_as_it_is_and_is_not_held_again(rspamd_settings, relay, sender_api):
    send(sender_api, f"Buy now {GTUBE}")
    outbound_dispatch_due()
    held_id = OutboundMessage.objects.get().pk

    released = sender_api.post(f"/mail/held/{held_id}/release")

    assert released.status_code == 200 and released.json()["decision"] == "released"
    assert outbound_dispatch_due() == 1
    assert [m.rcpt_tos for m in relay.messages] == [["bob@remote.test"]] and GTUBE.encode() in relay.messages[0].content
    assert OutboundMessage.objects.get().status == "sent" and len(events("email.sent")) == 1
    assert sender_api.post(f"/mail/held/{held_id}/release").status_code == 404  # decided once


@pytest.mark.django_db
def test_a_rejected_send_fails_and_never_leaves(rspamd_settings, relay, sender_api):
    send(sender_api, f"Buy now {GTUBE}")
    outbound_dispatch_due()
    held_id = OutboundMessage.objects.get().pk

    assert sender_api.post(f"/mail/held/{held_id}/reject").status_code == 200
    outbound_dispatch_due()

    assert relay.messages == []
    assert OutboundMessage.objects.get().status == "failed"
    (failed,) = events("email.failed")
    assert failed["recipients"] == [{"recipient": "bob@remote.test", "reply": "554 5.7.1 Not sent: it looked like "
                                     "spam and was held, and its sending was refused on review"}]


@pytest.mark.django_db
def test_another_accounts_held_send_is_not_found(rspamd_settings, relay, sender_api, charlie_api):
    send(sender_api, f"Buy now {GTUBE}")
    outbound_dispatch_due()
    held_id = OutboundMessage.objects.get().pk

    assert charlie_api.get("/mail/held").json() == []
    assert charlie_api.post(f"/mail/held/{held_id}/release").status_code == 404
    assert charlie_api.post(f"/mail/held/{held_id}/reject").status_code == 404
    assert OutboundMessage.objects.get().status == "held"


@pytest.mark.django_db
def test_an_ordinary_send_leaves_scored_and_unheld(rspamd_settings, relay, sender_api):
    send(sender_api, "Hi Bob, the report is attached to the ticket. See you on Tuesday.")

    assert outbound_dispatch_due() == 1

    assert len(relay.messages) == 1 and OutboundMessage.objects.get().status == "sent"
    assert events("email.held") == []


@pytest.mark.django_db
def test_an_integrator_plan_that_exempts_api_sends_lets_them_leave_unscored(rspamd_settings, relay, sender_api,
                                                                            alice):
    Plan.objects.filter(pk=alice.account.plan_id).update(score_api_sends=False)
    send(sender_api, f"Buy now {GTUBE}")

    outbound_dispatch_due()

    assert len(relay.messages) == 1 and events("email.held") == []


@pytest.mark.django_db
def test_when_rspamd_cannot_be_reached_mail_leaves_unscored(settings, relay, sender_api):
    settings.RSPAMD_URL = "http://127.0.0.1:9"
    send(sender_api, f"Buy now {GTUBE}")

    outbound_dispatch_due()

    assert len(relay.messages) == 1 and OutboundMessage.objects.get().status == "sent"


@pytest.mark.django_db
def test_webmail_mail_is_scored_whatever_the_plan_says_of_api_sends(rspamd_settings, relay, client, alice, mailbox):
    Plan.objects.filter(pk=alice.account.plan_id).update(score_api_sends=False)
    assert client.post("/webmail/", {"address": SENDER, "password": "mailbox-password-1"}).status_code == 302

    client.post("/webmail/compose/", {"to": "bob@remote.test", "cc": "", "bcc": "", "subject": "From the webmail",
                                      "body": f"Buy now {GTUBE}", "body_html": "", "format": "plain", "undo": "0",
                                      "action": "send"})
    outbound_dispatch_due()

    assert relay.messages == []
    (held,) = events("email.held")
    assert held["origin"] == "webmail" and held["subject"] == "From the webmail"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("plans")
def test_mail_from_the_owners_own_client_on_port_587_is_scored(rspamd_settings, relay, ann):
    with submission_intake() as port, smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
        client.sendmail(ann.address, ["reader@elsewhere.test"],
                        client_message(f"Ann <{ann.address}>", "From Thunderbird", body=f"Buy now {GTUBE}"))

    outbound_dispatch_due()

    assert relay.messages == []
    (held,) = events("email.held")
    assert held["origin"] == "submission" and held["subject"] == "From Thunderbird"
