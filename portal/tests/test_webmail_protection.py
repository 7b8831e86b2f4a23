"""The owner's spam protection in the webmail: a message that failed the sender checks carries a
plain-words warning; the settings page makes Junk stricter (never laxer than the domain) and keeps the
allowed and blocked senders, with and without htmx; another mailbox's sender is 404 and stays."""
import html
import re

import pytest
from django.conf import settings

from mailcore.store.factory import store_for
from protection.models import DomainPolicy, MailboxPolicy, SenderRule
from testkit.factories import make_mailbox, make_message

pytestmark = pytest.mark.django_db
PASSWORD = "mailbox-password-1"
SPOOFED = (f"Authentication-Results: {settings.MAIL_HOST}; spf=fail smtp.mailfrom=service@paypal.com; dkim=none; "
           "dmarc=fail (p=quarantine) header.from=paypal.com; arc=none\n")
GENUINE = (f"Authentication-Results: {settings.MAIL_HOST}; spf=pass smtp.mailfrom=service@paypal.com; dkim=pass "
           "header.d=paypal.com; dmarc=pass header.from=paypal.com; arc=none\n")


@pytest.fixture
def owner(alice):
    mailbox = make_mailbox(alice.account, "ann@example.test", password=PASSWORD)
    store_for(mailbox).ensure_folders()
    return mailbox


@pytest.fixture
def signed_in(client, owner):
    assert client.post("/webmail/", {"address": owner.address, "password": PASSWORD}).status_code == 302
    return client


def text(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def stored(mailbox, header: str) -> int:
    raw = header.encode() + make_message("Your account is limited", sender="PayPal <service@paypal.com>",
                                         to=mailbox.address)
    return store_for(mailbox).append("INBOX", raw)


def test_a_spoofed_message_warns_in_plain_words(signed_in, owner):
    uid = stored(owner, SPOOFED)
    page = text(signed_in.get(f"/webmail/folders/INBOX/messages/{uid}/"))
    assert "This message claims to be from paypal.com but was not sent by paypal.com's servers." in page
    assert "Domain's policy (DMARC): fail" in page


@pytest.mark.parametrize("header", [GENUINE, "", "Authentication-Results: mx.other.example; dmarc=fail\n"])
def test_a_genuine_or_unchecked_message_has_no_warning(signed_in, owner, header):
    uid = stored(owner, header)
    page = text(signed_in.get(f"/webmail/folders/INBOX/messages/{uid}/"))
    assert "Your account is limited" in page
    assert "was not sent by" not in page


def test_the_message_page_links_to_allowing_or_blocking_its_sender(signed_in, owner):
    uid = stored(owner, GENUINE)
    page = signed_in.get(f"/webmail/folders/INBOX/messages/{uid}/").content.decode()
    assert "/webmail/settings/spam/?sender=service%40paypal.com&amp;kind=block" in page
    form = signed_in.get("/webmail/settings/spam/?sender=service%40paypal.com&kind=block").content.decode()
    assert 'value="service@paypal.com"' in form
    assert re.search(r'value="block"[^>]*checked', form)


def test_the_owner_files_more_in_junk_but_not_less_than_the_domain(signed_in, owner):
    DomainPolicy.objects.create(domain=owner.domain, junk_at=5)
    page = signed_in.get("/webmail/settings/spam/")
    assert "Your provider puts mail in Junk from a spam score of 5." in text(page)
    laxer = signed_in.post("/webmail/settings/spam/", {"junk_at": "7"})
    assert laxer.status_code == 400
    assert "Can only be stricter than your provider's setting: at most 5." in text(laxer)
    assert not MailboxPolicy.objects.filter(junk_at__isnull=False).exists()
    stricter = signed_in.post("/webmail/settings/spam/", {"junk_at": "3.5"}, follow=True)
    assert "Saved. Mail arriving from now on goes to Junk from a spam score of 3.5." in text(stricter)
    assert MailboxPolicy.objects.get(mailbox=owner).junk_at == 3.5
    assert 'value="3.5"' in signed_in.get("/webmail/settings/spam/").content.decode()


def test_the_owner_adds_and_removes_senders_without_javascript(signed_in, owner):
    added = signed_in.post("/webmail/settings/spam/senders/", {"sender": "Bob@Friend.Example", "kind": "allow"},
                           follow=True)
    assert "bob@friend.example is always let in." in text(added)
    signed_in.post("/webmail/settings/spam/senders/", {"sender": "spam.example", "kind": "block"})
    assert list(SenderRule.objects.filter(mailbox=owner).values_list("kind", "sender")) == [
        ("allow", "bob@friend.example"), ("block", "spam.example")]
    rule = SenderRule.objects.get(sender="spam.example")
    removed = signed_in.post(f"/webmail/settings/spam/senders/{rule.pk}/delete/", follow=True)
    assert "spam.example removed." in text(removed)
    assert list(SenderRule.objects.values_list("sender", flat=True)) == ["bob@friend.example"]


def test_an_invalid_sender_is_explained_beside_the_field(signed_in, owner):
    response = signed_in.post("/webmail/settings/spam/senders/", {"sender": "bob@", "kind": "allow"})
    assert response.status_code == 400
    assert "bob@ is not an address (user@example.com) or a domain (example.com)." in text(response)
    assert not SenderRule.objects.exists()


def test_with_htmx_only_the_sender_list_comes_back(signed_in, owner):
    response = signed_in.post("/webmail/settings/spam/senders/", {"sender": "spam.example", "kind": "block"},
                              HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section id="sender-rules"')
    assert "spam.example is always refused." in text(response)
    refused = signed_in.post("/webmail/settings/spam/senders/", {"sender": "spam.example", "kind": "allow"},
                             HTTP_HX_REQUEST="true")
    assert "spam.example is already blocked; remove that rule first." in text(refused)


def test_another_mailboxs_sender_is_404_and_stays(signed_in, charlie):
    theirs = make_mailbox(charlie.account, "carl@charlie.test", password=PASSWORD)
    rule = SenderRule.objects.create(mailbox=theirs, kind="block", sender="x.example")
    assert signed_in.post(f"/webmail/settings/spam/senders/{rule.pk}/delete/").status_code == 404
    assert SenderRule.objects.filter(pk=rule.pk).exists()


def test_the_settings_menu_lists_spam_and_senders(signed_in, owner):
    assert "Spam and senders" in text(signed_in.get("/webmail/settings/"))


def test_the_conversation_view_warns_on_the_spoofed_message_too(signed_in, owner):
    uid = stored(owner, SPOOFED)
    page = text(signed_in.get(f"/webmail/conversations/INBOX/{uid}/"))
    assert "This message claims to be from paypal.com but was not sent by paypal.com's servers." in page
