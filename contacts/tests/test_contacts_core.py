"""Contacts under every path: vCard text kept canonical (a client's extra properties survive an
edit made here), ETags and the book's revision moving with every change, tombstones for deletions,
groups, imports and exports."""
import pytest
import vobject

from contacts.selectors import contact_list
from contacts.services import (
    ContactConflict, address_book_for, contact_create, contact_delete, contact_put, contact_update, contacts_export,
    contacts_import, group_delete, group_rename,
)
from mailcore.changelog import changes_since
from testkit.factories import AccountFactory, make_mailbox

pytestmark = pytest.mark.django_db

PHONE_CARD = (
    "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:phone-1\r\nFN:Grace Hopper\r\nN:Hopper;Grace;;;\r\n"
    "EMAIL;TYPE=INTERNET:grace@navy.test\r\nTEL;TYPE=CELL:+1 555 0100\r\nADR;TYPE=WORK:;;1 Navy Way;DC;;;US\r\n"
    "PHOTO;ENCODING=b;TYPE=JPEG:AAEC\r\nCATEGORIES:Navy\r\nEND:VCARD\r\n")


@pytest.fixture
def mailbox():
    account = AccountFactory(plan_code="pro")
    return make_mailbox(account, "owner@example.test")


def test_a_contact_made_here_is_a_vcard_4_with_an_etag_and_a_logged_change(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact = contact_create(book=book, name="Ada Lovelace", email="Ada@Example.TEST", company="Engines",
                             groups=["Work"])
    card = vobject.readOne(contact.vcard)
    assert card.version.value == "4.0" and card.uid.value == contact.uid
    assert card.fn.value == "Ada Lovelace" and card.email.value == "ada@example.test"
    assert card.categories.value == ["Work"]
    assert [change.href for change in changes_since(book, 0)] == [contact.href]
    first_etag, first_revision = contact.etag, book.revision

    contact_update(contact=contact, phone="+44 20 7946 0000")
    book.refresh_from_db()
    assert contact.etag != first_etag and book.revision == first_revision + 1
    assert vobject.readOne(contact.vcard).tel.value == "+44 20 7946 0000"


def test_a_phone_card_keeps_its_photo_and_address_through_an_edit_made_here(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact, created = contact_put(book=book, href="grace.vcf", text=PHONE_CARD)
    assert created and contact.vcard == PHONE_CARD
    assert (contact.name, contact.email, contact.phone) == ("Grace Hopper", "grace@navy.test", "+1 555 0100")
    assert [group.name for group in contact.groups.all()] == ["Navy"]

    contact_update(contact=contact, name="Rear Admiral Grace Hopper")
    card = vobject.readOne(contact.vcard)
    assert card.fn.value == "Rear Admiral Grace Hopper"
    assert card.photo.value and card.adr.value.street == "1 Navy Way"


def test_preconditions_and_uid_clashes_are_conflicts(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact, _ = contact_put(book=book, href="grace.vcf", text=PHONE_CARD)
    with pytest.raises(ContactConflict):
        contact_put(book=book, href="grace.vcf", text=PHONE_CARD, if_none_match=True)
    with pytest.raises(ContactConflict):
        contact_put(book=book, href="grace.vcf", text=PHONE_CARD, if_match="stale")
    with pytest.raises(ContactConflict):
        contact_put(book=book, href="other.vcf", text=PHONE_CARD)
    contact_put(book=book, href="grace.vcf", text=PHONE_CARD.replace("Grace Hopper", "G. Hopper"), if_match=contact.etag)


def test_a_deletion_leaves_a_tombstone_for_sync_clients(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact = contact_create(book=book, name="Temp", email="t@example.test")
    token = book.revision
    contact_delete(contact=contact)
    (change,) = changes_since(book, token)
    assert change.href == contact.href and change.deleted


def test_renaming_or_deleting_a_group_rewrites_its_members_vcards(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact = contact_create(book=book, name="Ada", email="ada@example.test", groups=["Work", "Friends"])
    group = book.groups.get(name="Work")
    group_rename(group=group, name="Office")
    contact.refresh_from_db()
    assert vobject.readOne(contact.vcard).categories.value == ["Friends", "Office"] or \
        sorted(vobject.readOne(contact.vcard).categories.value) == ["Friends", "Office"]
    group_delete(group=group)
    contact.refresh_from_db()
    assert vobject.readOne(contact.vcard).categories.value == ["Friends"]


def test_vcard_import_and_export_round_trip(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    second = PHONE_CARD.replace("phone-1", "phone-2").replace("Grace Hopper", "Alan Turing").replace("grace@", "alan@")
    result = contacts_import(book=book, text=PHONE_CARD + second + "BEGIN:VCARD\r\nVERSION:3.0\r\nEND:VCARD\r\n")
    assert (result.created, result.updated, len(result.errors)) == (2, 0, 1)
    exported = contacts_export(contacts=contact_list(account=mailbox.account, mailbox=mailbox))
    assert [card.fn.value for card in vobject.readComponents(exported)] == ["Alan Turing", "Grace Hopper"]
    again = contacts_import(book=book, text=exported)
    assert (again.created, again.updated) == (0, 2)


def test_account_and_mailbox_books_are_separate(mailbox):
    account_book = address_book_for(account=mailbox.account)
    mine = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact_create(book=account_book, name="Shared", email="s@example.test")
    contact_create(book=mine, name="Mine", email="m@example.test")
    assert [c.name for c in contact_list(account=mailbox.account, mailbox=mailbox)] == ["Mine"]
    assert [c.name for c in contact_list(account=mailbox.account, only_account_book=True)] == ["Shared"]
    assert [c.name for c in contact_list(account=mailbox.account, search="shar")] == ["Shared"]
    stranger = AccountFactory(plan_code="pro")
    assert not contact_list(account=stranger).exists()
