"""The webmail's own login realm: mailbox owners sign in with the mailbox password (never a portal
login), throttled, refused with the reason when the mailbox is off; they read their folder and a
message whose HTML is only ever shown inside a sandboxed frame."""
import re

import pytest

from mailcore.partners.models import PartnerMailbox
from mailcore.store.factory import store_for
from webmail.models import WebmailSession
from testkit.factories import make_mailbox, make_message

pytestmark = pytest.mark.django_db
PASSWORD = "mailbox-password-1"
HOSTILE = '<p>Hi</p><script>alert(1)</script><img src="https://tracker.example/p.gif" onerror="alert(2)">'


@pytest.fixture
def owner(alice):
    mailbox = make_mailbox(alice.account, "ann@example.test", password=PASSWORD)
    store = store_for(mailbox)
    store.ensure_folders()
    store.deliver(make_message("Quarterly numbers", to="ann@example.test"), recipient=mailbox.address,
                  envelope_from="x@elsewhere.test")
    store.deliver(make_message("Hostile", html=HOSTILE, to="ann@example.test"), recipient=mailbox.address,
                  envelope_from="x@elsewhere.test")
    return mailbox


def sign_in(client, address="ann@example.test", password=PASSWORD, **extra):
    return client.post("/webmail/", {"address": address, "password": password, **extra})


def test_the_owner_signs_in_with_the_mailbox_password_and_reads_the_inbox(client, owner):
    response = sign_in(client)
    assert response.status_code == 302 and response["Location"] == "/webmail/inbox/"
    assert response.cookies["mw_webmail"]["httponly"] and not response.cookies["mw_webmail"]["max-age"]
    page = client.get("/webmail/inbox/").content.decode()
    assert "Quarterly numbers" in page and "ann@example.test" in page


def test_remember_me_keeps_the_cookie_for_30_days(client, owner):
    response = sign_in(client, remember="on")
    assert response.cookies["mw_webmail"]["max-age"] == 30 * 86400


def test_a_wrong_password_is_refused_then_throttled(client, owner, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    for _ in range(3):
        refused = sign_in(client, password="wrong password")
        assert refused.status_code == 401 and "Wrong address or password" in refused.content.decode()
    throttled = sign_in(client)  # even the right password, until the window passes
    assert throttled.status_code == 429 and "Too many failed logins" in throttled.content.decode()
    assert int(throttled["Retry-After"]) > 0
    assert not WebmailSession.objects.exists()


def test_a_mailbox_waiting_for_payment_is_refused_with_the_reason(client, owner, alice):
    from billing.services.partners import partner_approve
    from mailcore.partners.services import hosting_partner_enable

    partner = partner_approve(partner=hosting_partner_enable(account=alice.account, status="pending"))
    PartnerMailbox.objects.create(partner=partner, mailbox=owner, plan_type="pro", status="pending_payment",
                                  funding_mode="pay_as_you_go", expires_at=owner.created_at)
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    refused = sign_in(client)
    assert refused.status_code == 403 and "waiting for its first payment" in refused.content.decode()


def test_portal_and_webmail_sessions_are_separate(client, owner, alice):
    client.force_login(alice)
    assert client.get("/webmail/inbox/")["Location"].startswith("/webmail/?next=")
    client.logout()
    sign_in(client)
    assert client.get("/portal/mailboxes/").status_code == 302  # the webmail cookie is no portal login


def test_hostile_html_is_only_inside_the_sandboxed_frame(client, owner):
    sign_in(client)
    listing = client.get("/webmail/inbox/").content.decode()
    uid = listing.split('/webmail/folders/INBOX/messages/')[1].split("/")[0]  # newest first: "Hostile"
    page = client.get(f"/webmail/folders/INBOX/messages/{uid}/").content.decode()
    frame = re.search(r'<iframe[^>]*\ssandbox="allow-popups allow-popups-to-escape-sandbox"[^>]*\ssrcdoc="', page)
    assert frame, "the body is only the srcdoc of a sandboxed frame, without allow-scripts or allow-same-origin"
    assert "<script>alert" not in page and "alert(1)" not in page.replace("&lt;", "")  # not live, not kept
    assert "tracker.example" not in page  # remote image removed until allowed


def test_logout_ends_the_session_and_next_never_leaves_the_site(client, owner):
    response = sign_in(client, next="https://evil.example/")
    assert response["Location"] == "/webmail/inbox/"
    client.post("/webmail/logout/")
    assert WebmailSession.objects.get().ended_at is not None
    assert client.get("/webmail/inbox/").status_code == 302
