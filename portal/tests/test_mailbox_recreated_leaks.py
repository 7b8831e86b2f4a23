"""A deleted address the partner creates again starts clean: nothing its first holder set up for
their own access or automations keeps working. Their forwarding no longer takes the new holder's
mail, their filters and vacation reply no longer run, their calendar feed link stops (at once, on
delete) and their send-failure notices do not show to the new holder."""
import re
from datetime import UTC, datetime, timedelta

from django.core import mail
from django.test import Client

from mailcore.mailboxes.models import ForwardingRule, Mailbox
from mailcore.sending.models import SendFailure
from mailcore.sending.services import SendRequest, mail_send
from mailcore.rules.models import SieveScript
from portal.tests.test_mailbox_recreated_sessions import (  # noqa: F401
    DAVE, FIRST, create_dave, delete_dave, partner_browser, pytestmark, webmail_sign_in,
)
from portal.tests.test_webmail_settings import filter_post, text

SECOND = "second owner's password"


def first_holder_sets_everything_up(alice) -> tuple[Client, str]:
    """Forwarding (confirmed by the target), a filter, a vacation reply, a calendar feed link and a
    send-failure notice; returns the signed-in browser and the feed's path."""
    owner, status = webmail_sign_in(FIRST)
    assert status == 302
    owner.post("/webmail/settings/forwarding/", {"forward_to": "first@elsewhere.test", "keep_copy": "on"})
    confirm = re.search(r"/v1/hosting/forwarding/confirm/[^\s\"<>]+", mail.outbox[-1].body).group(0)
    assert Client().post(confirm).status_code == 200  # the target presses Confirm
    assert ForwardingRule.objects.get(mailbox__address=DAVE).is_live
    assert owner.post("/webmail/settings/filters/", {**owner_filter()}, follow=True).status_code == 200
    owner.post("/webmail/settings/vacation/", {"enabled": "on", "subject": "Away", "body": "Back soon.",
                                               "days": "3"})
    assert SieveScript.objects.filter(mailbox__address=DAVE).exists()
    made = owner.post("/webmail/calendar/settings/feed/")
    feed = re.search(r'id="feed-url" type="text" value="([^"]+)"', made.content.decode()).group(1)
    feed = feed.removeprefix("http://testserver")
    assert Client().get(feed).status_code == 200
    mailbox = Mailbox.objects.get(address=DAVE)
    sent = mail_send(account=alice.account, user=alice, request=SendRequest(
        from_email=DAVE, to=["reader@elsewhere.test"], subject="The first holder's private plans", body_text="x",
        scheduled_at=datetime.now(UTC) + timedelta(days=3)))
    SendFailure.objects.create(message=sent, mailbox=mailbox, recipients=[
        {"recipient": "reader@elsewhere.test", "reply": "550 5.1.1 No such user"}])
    assert "reader@elsewhere.test" in owner.get("/webmail/inbox/").content.decode()
    return owner, feed


def owner_filter() -> dict:
    return filter_post(folder="Archive")


def test_a_recreated_address_keeps_nothing_of_its_first_holders_automations(partner_browser, alice):
    create_dave(partner_browser, FIRST)
    _, feed = first_holder_sets_everything_up(alice)

    delete_dave(partner_browser)
    assert Client().get(feed).status_code == 404  # the deleted mailbox's feed stops at once

    create_dave(partner_browser, SECOND)
    new_holder, status = webmail_sign_in(SECOND)
    assert status == 302

    forwarding = text(new_holder.get("/webmail/settings/forwarding/"))
    assert "first@elsewhere.test" not in forwarding
    assert "receipt" not in text(new_holder.get("/webmail/settings/filters/"))
    assert "Back soon." not in new_holder.get("/webmail/settings/vacation/").content.decode()
    assert not SieveScript.objects.filter(mailbox__address=DAVE).exists()  # what Dovecot runs on delivery
    assert Client().get(feed).status_code == 404
    inbox = new_holder.get("/webmail/inbox/").content.decode()
    assert "reader@elsewhere.test" not in inbox
    assert not ForwardingRule.objects.filter(mailbox__address=DAVE).exists()
