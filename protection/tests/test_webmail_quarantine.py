"""The owner's quarantine page in the webmail: held messages with their reasons, release, delete."""
import pytest

from mailcore.store.factory import store_for
from protection.models import Quarantined, SenderRule
from protection.tests.conftest import keep
from testkit.factories import make_mailbox

PASSWORD = "mailbox-password-1"


@pytest.fixture
def owner(alice, embedded, db):
    mailbox = make_mailbox(alice.account, "ann@example.test", password=PASSWORD)
    store_for(mailbox).ensure_folders()
    return mailbox


@pytest.fixture
def signed_in(client, owner):
    assert client.post("/webmail/", {"address": owner.address, "password": PASSWORD}).status_code == 302
    return client


def test_the_page_lists_held_messages_with_their_reasons(signed_in, owner):
    keep(owner, "Big sale", reasons=["The sender's domain is on a spam list."], virus="Eicar-Signature")

    page = signed_in.get("/webmail/quarantine/").content.decode()

    assert "Big sale" in page and "The sender&#x27;s domain is on a spam list." in page
    assert "Virus: Eicar-Signature" in page and "Release to Inbox" in page


def test_release_and_allow_puts_it_in_the_inbox_and_allows_the_sender(signed_in, owner):
    item = keep(owner)

    response = signed_in.post(f"/webmail/quarantine/{item.public_id}/", {"action": "release_allow"}, follow=True)

    assert "is in your Inbox. news@shop.test is now on your allow list." in response.content.decode()
    [summary] = store_for(owner).list("INBOX").messages
    assert summary.subject == "Big sale"
    assert SenderRule.objects.get(mailbox=owner).sender == "news@shop.test"
    assert "Nothing is held for you." in response.content.decode()


def test_delete_removes_it_from_the_list(signed_in, owner):
    item = keep(owner)

    signed_in.post(f"/webmail/quarantine/{item.public_id}/", {"action": "delete"})

    assert not Quarantined.objects.get(pk=item.pk).is_waiting
    assert store_for(owner).list("INBOX").total == 0


def test_another_mailbox_s_message_is_404_and_stays(signed_in, owner, charlie):
    other = keep(make_mailbox(charlie.account, "carl@charlie.test"))

    assert signed_in.post(f"/webmail/quarantine/{other.public_id}/", {"action": "release"}).status_code == 404
    assert Quarantined.objects.get(pk=other.pk).is_waiting


def test_without_signing_in_the_page_goes_to_the_sign_in(client, owner):
    assert client.get("/webmail/quarantine/").status_code == 302
